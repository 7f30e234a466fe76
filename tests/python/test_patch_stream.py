"""Patch mode over StreamPatches (issue 22) against the real augmentd binary on the CPU: every delivery available on
the CPU (inline / host shm output, inline / server host-shm input slots) gives the bytes of the unary inline Augment
call, PatchAugmenter's round trip (submit / result overlap, several threads), the lease errors with their precise
codes, and 1,000 calls leaving /dev/shm and the session's slots at their baseline."""
import os
import queue
import threading
import time

import grpc
import numpy as np
import pytest

from augmentd_server import ServerProcess  # first: makes `augmentd` importable
from test_sessions import _write_dataset

import augmentd  # noqa: E402
from augmentd.v1 import batch_pb2, server_info_pb2, tensor_pb2  # noqa: E402

torch = pytest.importorskip("torch")

SHM = server_info_pb2.DELIVERY_KIND_HOST_SHM
INLINE = server_info_pb2.DELIVERY_KIND_INLINE
PATCH = (16, 16, 16)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("patch_data")
    proc = ServerProcess(["--listen=127.0.0.1:0", "--device=cpu", "--max_batch_size=4", "--batch_workers=2",
                          "--max_streams_per_session=4", f"--dataset_root={root}"])
    proc.root = root
    try:
        proc.addresses = proc.wait_for_serving()
        yield proc
    finally:
        rc = proc.stop()
    assert rc == 0, f"augmentd exited with {rc}:\n{proc.output}"


@pytest.fixture
def client(server):
    with augmentd.Client(server.addresses[0]) as c:
        yield c


def _config(seed=5, batch_size=2, delivery=None, input_slots=0, prefetch=0):
    config = augmentd.patch_session_config(PATCH, batch_size=batch_size, seed=seed,
                                           deep_supervision_scales=[[1, 1, 1], [0.5, 0.5, 0.5]])
    config.prefetch_depth = prefetch
    if delivery is not None:
        config.delivery = delivery
    config.patch.input_slots = input_slots
    return config


def _patches(initial, b=2, seed=0):
    rng = np.random.default_rng(seed)
    image = rng.standard_normal((b, 1, *initial)).astype(np.float32)
    seg = (rng.random((b, 1, *initial)) * 3).astype(np.int16)
    return image, seg


def _reference(client, config, inputs):
    """Unary inline Augment of each (batch_index, image, seg) on a fresh session of `config`."""
    ref = client.open_session(config)
    try:
        out = []
        for index, image, seg in inputs:
            b = client.augment(ref, image, seg, batch_index=index)
            out.append((b.image.copy(), [t.copy() for t in b.targets]))
        return out
    finally:
        client.close_session(ref)


def _settled_stats(client, session, batches=0, timeout=5.0):
    """The session's stats once the last result's release reached the server (it travels with a Release message,
    asynchronously: at most `hold` (1) slot stays leased) and `batches` were counted (a batch is counted
    when the server's write completes, which may be after the client received it)."""
    deadline = time.monotonic() + timeout
    while True:
        st = client.stats(session).sessions[0]
        if (st.leased_slots <= 1 and st.batches_produced >= batches) or time.monotonic() > deadline:
            return st
        time.sleep(0.02)


def _shm_names(pid):
    """The shared-memory objects of the server process `pid` (other servers may run on this machine)."""
    return sorted(n for n in os.listdir("/dev/shm") if n.startswith(f"augmentd-{pid}-"))


@pytest.mark.parametrize("delivery,inline_inputs", [(SHM, False), (SHM, True), (INLINE, False), (INLINE, True)],
                         ids=["shm_out-slot_in", "shm_out-inline_in", "inline_out-slot_in", "inline_out-inline_in"])
def test_every_cpu_delivery_equals_inline_bit_for_bit(client, delivery, inline_inputs):
    config = _config(delivery=delivery)
    probe = client.open_session(_config())
    initial = probe.initial_patch_size
    client.close_session(probe)
    inputs = [(3, *_patches(initial, 2, 1)), (4, *_patches(initial, 1, 2)), (9, *_patches(initial, 2, 3))]
    expected = _reference(client, _config(), inputs)
    with augmentd.PatchAugmenter(client, config, depth=3, inline=inline_inputs) as aug:
        assert aug.session.delivery == delivery
        assert aug.input_slots == (0 if inline_inputs else 3)
        if not inline_inputs:
            assert [s.host_shm.name for s in aug.session.response.input_slots] == ["input0", "input1", "input2"]
        futures = [aug.submit(torch.from_numpy(image), torch.from_numpy(seg), batch_index=index)
                   for index, image, seg in inputs[:2]]  # three in flight
        futures.append(aug.submit(inputs[2][1], inputs[2][2], batch_index=inputs[2][0]))  # numpy works too
        for future, (eimage, etargets) in zip(futures, expected):
            image, targets = aug.result(future)
            assert image.device.type == "cpu" and image.dtype == torch.float32
            assert np.array_equal(image.numpy(), eimage)
            assert len(targets) == len(etargets) == 2
            assert all(np.array_equal(t.numpy(), e) for t, e in zip(targets, etargets))


def test_patch_augmenter_round_trip_threads_and_replay(client):
    config = _config(seed=8)
    probe = client.open_session(config)
    initial = probe.initial_patch_size
    client.close_session(probe)
    inputs = [(i, *_patches(initial, 2, 10 + i)) for i in range(12)]
    expected = _reference(client, config, inputs)
    with augmentd.PatchAugmenter(client, config, depth=3, hold=1) as aug:
        assert aug.session.response.device.name == "cpu"
        # __call__ with the automatic batch index (0, 1, ...), then a replayed index.
        image, targets = aug(torch.from_numpy(inputs[0][1]), torch.from_numpy(inputs[0][2]))
        assert np.array_equal(image.numpy(), expected[0][0])
        image, targets = aug(torch.from_numpy(inputs[1][1]), torch.from_numpy(inputs[1][2]))
        assert np.array_equal(image.numpy(), expected[1][0])
        image, _ = aug(inputs[0][1], inputs[0][2], batch_index=0)
        assert np.array_equal(image.numpy(), expected[0][0])
        # Several threads at once (copy=True: each keeps its own result while the others go on).
        errors, seen = [], {}

        def work(indices):
            try:
                for i in indices:
                    _, im, sg = inputs[i]
                    out, tg = aug.result(aug.submit(torch.from_numpy(im), torch.from_numpy(sg), batch_index=i),
                                         copy=True)
                    seen[i] = (out.numpy(), [t.numpy() for t in tg])
            except BaseException as err:  # noqa: BLE001
                errors.append(err)

        threads = [threading.Thread(target=work, args=(range(k, 12, 3),)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not errors, errors
        assert sorted(seen) == list(range(12))
        for i, (im, tg) in seen.items():
            assert np.array_equal(im, expected[i][0]), i
            assert all(np.array_equal(a, b) for a, b in zip(tg, expected[i][1])), i
        st = _settled_stats(client, aug.session, 15)
        assert st.batches_produced >= 15 and st.leased_slots <= 1
    assert client.health() == augmentd.HealthStatus.SERVING


class RawPatchStream:
    """StreamPatches driven message by message (for the protocol errors)."""

    def __init__(self, client):
        self._q = queue.SimpleQueue()
        self._call = client.stub.StreamPatches(iter(self._q.get, None))

    def send(self, **msg):
        self._q.put(batch_pb2.StreamBatchesRequest(**msg))

    def recv(self):
        return next(self._call)

    def status(self):
        """(code, details) once the server ended the stream."""
        self._q.put(None)
        try:
            for _ in self._call:
                pass
        except grpc.RpcError as err:
            return err.code(), err.details()
        return grpc.StatusCode.OK, ""

    def cancel(self):
        self._q.put(None)
        self._call.cancel()


def _slot_request(session, lease, image, seg, index=0, image_offset=0):
    """An AugmentRequest naming input slot `lease` (the patches must already be in the slot)."""
    req = batch_pb2.AugmentRequest(session_id=session.session_id, session_token=session.session_token,
                                   batch_index=index, input_slot=lease)
    seg_offset = (image.nbytes + 255) // 256 * 256
    for t, a, off, name in ((req.image, image, image_offset, "image"), (req.segmentation, seg, seg_offset, "segmentation")):
        t.name, t.dtype = name, (tensor_pb2.DTYPE_FLOAT32 if a.dtype == np.float32 else tensor_pb2.DTYPE_INT16)
        t.shape.extend(a.shape)
        t.host_shm.region, t.host_shm.offset, t.host_shm.byte_size = f"input{lease.slot}", off, a.nbytes
    return req


def _start(stream, session, credits=8):
    stream.send(start=batch_pb2.StreamStart(session_id=session.session_id, session_token=session.session_token,
                                            initial_credits=credits))


def test_lease_errors_get_precise_codes(client, server):
    C = grpc.StatusCode
    a = client.open_session(_config(delivery=SHM, input_slots=2))
    b = client.open_session(_config(delivery=SHM, input_slots=1))
    plain = client.open_session(_config(delivery=SHM))
    image, seg = _patches(a.initial_patch_size)
    cases = []

    def first_leases(stream):
        msg = stream.recv()
        assert msg.WhichOneof("msg") == "input_slots"
        return list(msg.input_slots.leases)

    def leased_stream(session):
        # An ended stream's slots come back, and it stops counting against max_streams_per_session, when the server
        # has handled its end (asynchronously): retry, bounded.
        deadline = time.monotonic() + 10
        while True:
            stream = RawPatchStream(client)
            _start(stream, session)
            try:
                leases = first_leases(stream)
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.RESOURCE_EXHAUSTED or time.monotonic() > deadline:
                    raise
                leases = []
            if leases or time.monotonic() > deadline:
                assert leases, "no input leases within 10 s"
                return stream, leases
            stream.cancel()
            time.sleep(0.05)

    # Released twice: the same input lease named by two requests before it came back. One output slot, held by the
    # client (never released), keeps the second request waiting — so its input slot is still the server's.
    one = client.open_session(_config(delivery=SHM, input_slots=2, prefetch=1))
    s = RawPatchStream(client)
    _start(s, one)
    la = first_leases(s)
    assert [x.slot for x in la] == [0, 1]
    s.send(patches=_slot_request(one, la[0], image, seg))
    assert s.recv().batch.input_lease.slot == 0  # produced into the only output slot, which the client keeps
    s.send(patches=_slot_request(one, la[1], image, seg))  # waits for an output slot, holding input slot 1
    s.send(patches=_slot_request(one, la[1], image, seg))
    cases.append(("released twice", s.status(), C.FAILED_PRECONDITION, "released twice"))
    client.close_session(one)

    # Stale: after the batch gave the slot back with a new generation, the old lease is refused.
    s, la = leased_stream(a)
    s.send(patches=_slot_request(a, la[0], image, seg))
    msg = s.recv()
    assert msg.batch.input_lease.slot == 0 and msg.batch.input_lease.generation == la[0].generation + 1
    out_lease = msg.batch.lease
    s.send(release=batch_pb2.Release(leases=[out_lease]))
    s.send(release=batch_pb2.Release(leases=[out_lease]))  # output released twice
    cases.append(("output released twice", s.status(), C.FAILED_PRECONDITION, "release.leases[0]"))

    s, la = leased_stream(a)
    s.send(patches=_slot_request(a, la[1], image, seg))
    s.recv()
    s.send(patches=_slot_request(a, la[1], image, seg))
    cases.append(("stale generation", s.status(), C.FAILED_PRECONDITION, "stale"))

    # Not leased to this stream: another stream of the session holds every slot.
    holder, lh = leased_stream(a)
    s = RawPatchStream(client)
    _start(s, a)
    assert first_leases(s) == []
    s.send(patches=_slot_request(a, lh[0], image, seg))
    cases.append(("not leased", s.status(), C.FAILED_PRECONDITION, "not leased to this stream"))
    holder.cancel()

    # Another session's lease (session b's stream, session a's lease).
    sa, la = leased_stream(a)
    sb, _ = leased_stream(b)
    req = _slot_request(b, la[0], image, seg)
    req.input_slot.slot = 0
    sb.send(patches=req)
    cases.append(("another session", sb.status(), C.FAILED_PRECONDITION, "another session"))
    sa.cancel()

    # A tensor that does not fit its slot; a slot index out of range; no input slots at all.
    for what, make, code, needle in [
        ("does not fit", lambda l: _slot_request(a, l[0], image, seg, image_offset=a.response.input_slots[0].byte_size - 64),
         C.INVALID_ARGUMENT, "does not fit input slot 'input0'"),
        ("out of range", lambda l: _slot_request(a, batch_pb2.SlotLease(slot=7, generation=l[0].generation), image, seg),
         C.INVALID_ARGUMENT, "input_slot.slot"),
        ("wrong shape", lambda l: _slot_request(a, l[0], image[:, :, :-1], seg[:, :, :-1]),
         C.INVALID_ARGUMENT, "image.shape"),
    ]:
        s, leases = leased_stream(a)
        s.send(patches=make(leases))
        cases.append((what, s.status(), code, needle))
    s = RawPatchStream(client)
    _start(s, plain)
    s.send(patches=_slot_request(plain, batch_pb2.SlotLease(slot=0, generation=1), image, seg))
    cases.append(("no input slots", s.status(), C.FAILED_PRECONDITION, "config.patch.input_slots"))
    s = RawPatchStream(client)
    s.send(patches=_slot_request(a, batch_pb2.SlotLease(slot=0), image, seg))
    cases.append(("patches before start", s.status(), C.INVALID_ARGUMENT, "start"))

    # A dataset-mode session on StreamPatches; an input slot on unary Augment.
    dataset = _write_dataset(server.root)
    ds = client.open_session(augmentd.dataset_session_config(str(dataset / "nnUNetPlans_3d_fullres")))
    s = RawPatchStream(client)
    _start(s, ds)
    cases.append(("dataset session", s.status(), C.FAILED_PRECONDITION, "dataset mode"))
    client.close_session(ds)
    with pytest.raises(grpc.RpcError) as err:
        client.stub.Augment(_slot_request(a, batch_pb2.SlotLease(slot=0), image, seg))
    cases.append(("unary with input slot", (err.value.code(), err.value.details()), C.FAILED_PRECONDITION,
                  "StreamPatches"))

    # OpenSession: too many input slots; CUDA input slots on a CPU session.
    for config, want, needle in ((_config(input_slots=100), C.RESOURCE_EXHAUSTED, "config.patch.input_slots"),
                                 (_config(input_slots=1), C.INVALID_ARGUMENT, "config.patch.input_slot_kind")):
        if needle.endswith("kind"):
            config.patch.input_slot_kind = server_info_pb2.DELIVERY_KIND_CUDA_IPC
        with pytest.raises(augmentd.AugmentdError) as err:
            client.open_session(config)
        cases.append((needle, (err.value.code, err.value.details), want, needle))

    for what, (code, details), want, needle in cases:
        assert code == want and needle in details, f"{what}: {code} {details!r}"
    # Client-side: a tensor on another device, one that does not fit the session's input.
    with augmentd.PatchAugmenter(client, _config(seed=1)) as aug:
        with pytest.raises(ValueError, match="session runs on cpu"):
            aug.submit(torch.empty(image.shape, device="meta"), torch.from_numpy(seg))
        with pytest.raises(ValueError, match="does not fit the session's input"):
            aug.submit(image[:, :, 1:], seg[:, :, 1:])
        out, _ = aug(image, seg)  # still usable
        assert tuple(out.shape) == (2, 1, *PATCH)
    for session in (a, b, plain):
        client.close_session(session)
    assert client.health() == augmentd.HealthStatus.SERVING


def _rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_1000_calls_leave_shm_and_slots_at_baseline(client, server):
    config = augmentd.patch_session_config((8, 8, 8), batch_size=1, seed=3)
    baseline = _shm_names(server.proc.pid)
    with augmentd.PatchAugmenter(client, config, depth=2) as aug:
        assert len(_shm_names(server.proc.pid)) == len(baseline) + 2 + 3  # 2 input + 3 output slots
        image, seg = _patches(aug.patch_size, 1)
        ti, ts = torch.from_numpy(image), torch.from_numpy(seg)
        for _ in range(50):
            aug(ti, ts)
        rss = _rss_kib(server.proc.pid)
        start = time.monotonic()
        pending = []
        for i in range(1000):  # bounded: ~1 ms a call here
            pending.append(aug.submit(ti, ts))
            if len(pending) == 2:
                aug.result(pending.pop(0))
            assert time.monotonic() - start < 120
        for f in pending:
            aug.result(f)
        st = _settled_stats(client, aug.session, 1050)
        assert st.batches_produced >= 1050 and st.leased_slots <= 1 and st.stale_releases == 0
        grown = _rss_kib(server.proc.pid) - rss
        assert grown < 64 * 1024, f"server RSS grew by {grown} KiB over 1000 calls"
    assert _shm_names(server.proc.pid) == baseline
    # Opening and closing augmenters leaves nothing behind either.
    for _ in range(20):
        with augmentd.PatchAugmenter(client, config) as aug:
            aug(ti, ts)
    assert _shm_names(server.proc.pid) == baseline
    assert client.health() == augmentd.HealthStatus.SERVING


def test_inline_patches_of_a_large_batch_and_the_phases_of_a_call(client):
    """Inline requests larger than the decoder's small-message cut (augmentd.wire.encode_stream_request in, views of
    the received message out) equal the unary call; every call's phases (client and server wall clocks) add up to
    its submit → result span."""
    config = augmentd.patch_session_config((40, 40, 40), batch_size=2, seed=3,
                                           deep_supervision_scales=[[1, 1, 1], [0.5, 0.5, 0.5]])
    probe = client.open_session(config)
    initial = probe.initial_patch_size
    client.close_session(probe)
    inputs = [(i, *_patches(initial, 2, 20 + i)) for i in range(3)]
    assert inputs[0][1].nbytes > 256 << 10
    expected = _reference(client, config, inputs)
    for inline in (True, False):
        with augmentd.PatchAugmenter(client, config, depth=2, inline=inline) as aug:
            for (index, image, seg), (eimage, etargets) in zip(inputs, expected):
                future = aug.submit(image, seg, batch_index=index)
                out, targets = aug.result(future)
                assert np.array_equal(out.numpy(), eimage)
                assert all(np.array_equal(t.numpy(), e) for t, e in zip(targets, etargets))
                phases = future.phases()
                assert sorted(phases) == sorted(["submit", "request", "queue", "compute", "delivery", "response",
                                                 "result"])
                assert phases["compute"] == future._batch.proto.timing.compute_us / 1e3
                span = (future.returned_ns - future.submit_ns) / 1e6
                assert abs(sum(phases.values()) - span) < 1e-6 and span > 0


def _chunk_header(session, image, seg, index=0, chunked_bytes=None, image_data=b""):
    """A patches request announcing chunked inline bytes (AugmentRequest.chunked_bytes; inline_data left empty)."""
    req = batch_pb2.AugmentRequest(session_id=session.session_id, session_token=session.session_token,
                                   batch_index=index,
                                   chunked_bytes=image.nbytes + seg.nbytes if chunked_bytes is None else chunked_bytes)
    for t, a, name in ((req.image, image, "image"), (req.segmentation, seg, "segmentation")):
        t.name, t.dtype = name, (tensor_pb2.DTYPE_FLOAT32 if a.dtype == np.float32 else tensor_pb2.DTYPE_INT16)
        t.shape.extend(a.shape)
        t.inline_data = b""
    req.image.inline_data = image_data
    return req


def _chunk(offset, data):
    return batch_pb2.PatchChunk(offset=offset, data=bytes(data))


@pytest.mark.parametrize("chunk", [4099, 65536, 1 << 30], ids=["odd_4099", "64KiB", "one_chunk"])
def test_chunked_inline_patches_equal_the_unary_call_bit_for_bit(client, monkeypatch, chunk):
    """PatchAugmenter sends inline batches as PatchChunk messages where the server lists "patch_chunks": odd chunk
    sizes (chunks across the image / segmentation boundary), one chunk for everything; results equal unary Augment."""
    import augmentd.patch as patch_mod

    assert "patch_chunks" in client.server_info().features
    monkeypatch.setenv("AUGMENTD_PATCH_CHUNK", str(chunk))
    monkeypatch.setattr(patch_mod, "_CHUNK_MIN", 1)
    calls = []
    real = patch_mod.encode_chunked_request
    monkeypatch.setattr(patch_mod, "encode_chunked_request", lambda m, c: calls.append(c) or real(m, c))
    config = _config(delivery=INLINE, seed=11)
    probe = client.open_session(config)
    initial = probe.initial_patch_size
    client.close_session(probe)
    inputs = [(3, *_patches(initial, 2, 31)), (4, *_patches(initial, 1, 32)), (7, *_patches(initial, 2, 33))]
    expected = _reference(client, config, inputs)
    with augmentd.PatchAugmenter(client, config, depth=3, inline=True) as aug:
        assert aug._chunk == chunk
        futures = [aug.submit(image, seg, batch_index=index) for index, image, seg in inputs]
        for future, (eimage, etargets) in zip(futures, expected):
            image, targets = aug.result(future)
            assert np.array_equal(image.numpy(), eimage)
            assert all(np.array_equal(t.numpy(), e) for t, e in zip(targets, etargets))
    assert calls == [chunk] * 3


def test_chunks_with_credits_between_them_make_one_batch(client):
    config = _config(delivery=INLINE, seed=12)
    session = client.open_session(config)
    image, seg = _patches(session.initial_patch_size, 2, 40)
    (expected_image, expected_targets), = _reference(client, config, [(5, image, seg)])
    data = image.tobytes() + seg.tobytes()
    cut = image.nbytes + 7  # a chunk across the image / segmentation boundary
    s = RawPatchStream(client)
    _start(s, session, credits=0)
    s.send(patches=_chunk_header(session, image, seg, index=5))
    s.send(chunk=_chunk(0, data[:1000]))
    s.send(credit=batch_pb2.Credit(credits=1))
    s.send(chunk=_chunk(1000, data[1000:cut]))
    s.send(release=batch_pb2.Release())
    s.send(chunk=_chunk(cut, data[cut:]))
    batch = s.recv().batch
    assert batch.batch_index == 5
    got = augmentd.Batch(batch, None)
    assert np.array_equal(got.image, expected_image)
    assert all(np.array_equal(t, e) for t, e in zip(got.targets, expected_targets))
    assert s.status() == (grpc.StatusCode.OK, "")
    client.close_session(session)


def test_chunk_errors_get_precise_codes(client):
    C = grpc.StatusCode
    session = client.open_session(_config(delivery=INLINE))
    image, seg = _patches(session.initial_patch_size, 2, 41)
    data = image.tobytes() + seg.tobytes()
    total = len(data)
    cases = []

    def run(name, messages, code, needle):
        s = RawPatchStream(client)
        _start(s, session)
        for m in messages:
            s.send(**m)
        cases.append((name, s.status(), code, needle))

    header = {"patches": _chunk_header(session, image, seg)}
    run("chunk without a header", [{"chunk": _chunk(0, data[:10])}], C.INVALID_ARGUMENT, "chunk: no batch is waiting")
    run("chunk missing", [header, {"chunk": _chunk(0, data[:100])}, {"chunk": _chunk(200, data[200:300])}],
        C.INVALID_ARGUMENT, "chunk.offset: 200, but 100 bytes of batch 0 arrived")
    run("chunk duplicated", [header, {"chunk": _chunk(0, data[:100])}, {"chunk": _chunk(0, data[:100])}],
        C.INVALID_ARGUMENT, "chunk.offset: 0, but 100 bytes")
    run("chunk past the end", [header, {"chunk": _chunk(0, data + b"x")}], C.INVALID_ARGUMENT,
        f"chunk.data: {total + 1} bytes at offset 0 run past patches.chunked_bytes {total}")
    run("one chunk too many", [header, {"chunk": _chunk(0, data)}, {"chunk": _chunk(total, b"x")}],
        C.INVALID_ARGUMENT, "chunk: no batch is waiting")
    run("empty chunk", [header, {"chunk": _chunk(0, b"")}], C.INVALID_ARGUMENT, "chunk.data: empty")
    run("wrong total", [{"patches": _chunk_header(session, image, seg, chunked_bytes=total - 1)}],
        C.INVALID_ARGUMENT, f"patches.chunked_bytes: {total - 1}, but image ({image.nbytes}) and segmentation")
    run("inline data and chunks", [{"patches": _chunk_header(session, image, seg, image_data=image.tobytes())}],
        C.INVALID_ARGUMENT, "patches.image: must be inline and empty")
    big = (1, 1, 1024, 1024, 100)  # 600 MB announced (broadcast views: no memory) > the default 256 MiB limit
    run("past max_request_bytes", [{"patches": _chunk_header(session, np.broadcast_to(np.float32(0), big),
                                                             np.broadcast_to(np.int16(0), big))}],
        C.RESOURCE_EXHAUSTED, "max_request_bytes: patches.chunked_bytes 629145600 exceeds")
    slot = _chunk_header(session, image, seg)
    slot.input_slot.slot = 0
    run("chunks and an input slot", [{"patches": slot}], C.INVALID_ARGUMENT, "exclude each other")
    run("patches before the chunks are complete", [header, {"chunk": _chunk(0, data[:100])}, header],
        C.INVALID_ARGUMENT, f"patches: batch 0 is still incomplete (100 of {total} chunked bytes arrived)")
    s = RawPatchStream(client)
    s.send(chunk=_chunk(0, b"x"))
    cases.append(("chunk before start", s.status(), C.INVALID_ARGUMENT, "chunk: the first message must be start"))
    for name, (code, details), want_code, needle in cases:
        assert code == want_code, (name, code, details)
        assert needle in details, (name, details)
    client.close_session(session)
    assert client.health() == augmentd.HealthStatus.SERVING
