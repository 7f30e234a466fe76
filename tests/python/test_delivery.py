"""Zero-copy delivery (issue 5) against the real augmentd binary on the CPU device: HOST_SHM output slots with
leases, killed clients, CloseSession freeing the slots, memory limits, and patch-mode inputs in client shared
memory. The dataset is test_sessions' miniature nnU-Net dataset."""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from augmentd_server import ServerProcess, client_env, wait_until  # first: makes `augmentd` importable
from test_sessions import _write_dataset

import augmentd  # noqa: E402
from augmentd.sessions import BatchStream  # noqa: E402
from augmentd.v1 import batch_pb2, server_info_pb2  # noqa: E402

import grpc  # noqa: E402

SHM = server_info_pb2.DELIVERY_KIND_HOST_SHM


def _serve(tmp_path, *extra):
    proc = ServerProcess(["--listen=127.0.0.1:0", "--device=cpu", f"--dataset_root={tmp_path}",
                          "--max_batch_size=4", "--batch_workers=2", *extra])
    proc.addresses = proc.wait_for_serving()
    return proc


@pytest.fixture
def served(tmp_path):
    dataset = _write_dataset(tmp_path)
    proc = _serve(tmp_path)
    try:
        yield proc, str(dataset / "nnUNetPlans_3d_fullres")
    finally:
        rc = proc.stop()
    assert rc == 0, f"augmentd exited with {rc}:\n{proc.output}"


def _config(path, delivery="inline", seed=11, prefetch=3, **kw):
    return augmentd.dataset_session_config(path, batch_size=2, seed=seed, prefetch_depth=prefetch,
                                           delivery=delivery, **kw)


def _stats(client, session):
    return client.stats(session).sessions[0]


def test_server_info_advertises_deliveries_per_device(served):
    server, _ = served
    with augmentd.Client(server.addresses[0]) as client:
        info = client.server_info()
    assert SHM in info.deliveries and server_info_pb2.DELIVERY_KIND_INLINE in info.deliveries
    cpu = info.devices[0]
    assert cpu.name == "cpu"
    assert list(cpu.deliveries) == [server_info_pb2.DELIVERY_KIND_INLINE, SHM]


@pytest.mark.parametrize("dtypes", ["default", "compact"])
def test_host_shm_equals_inline_and_views_the_slot(served, dtypes):
    server, path = served
    kw = {} if dtypes == "default" else dict(image_dtype=augmentd.v1.tensor_pb2.DTYPE_FLOAT16,
                                             label_dtype=augmentd.v1.tensor_pb2.DTYPE_INT8)
    with augmentd.Client(server.addresses[0]) as client:
        inline = client.open_session(_config(path, **kw))
        shm = client.open_session(_config(path, delivery="host_shm", **kw))
        assert inline.delivery == server_info_pb2.DELIVERY_KIND_INLINE and len(inline.response.output_slots) == 0
        assert shm.delivery == SHM and len(shm.response.output_slots) == 3
        with client.stream_batches(inline, max_batches=5) as stream:
            expected = [(b.image.copy(), [t.copy() for t in b.targets]) for b in stream]
        got, generations = [], set()
        with client.stream_batches(shm, max_batches=5) as stream:
            for b in stream:
                assert b.lease is not None and b.proto.image.WhichOneof("storage") == "host_shm"
                assert b.sample_indices == [2 * b.batch_index, 2 * b.batch_index + 1] and all(b.case_ids)
                mem = shm.slots.slots[b.proto.image.host_shm.region]
                base = np.frombuffer(mem.buffer, np.uint8).ctypes.data
                assert b.image.ctypes.data == base + b.proto.image.host_shm.offset  # a view, not a copy
                image_t, targets_t = b.torch()
                assert image_t.data_ptr() == b.image.ctypes.data
                generations.add((b.lease.slot, b.lease.generation))
                got.append((b.image.copy(), [t.copy() for t in b.targets]))
        assert len(generations) == 5
        assert len(got) == len(expected) == 5
        for (gi, gt), (ei, et) in zip(got, expected):
            assert gi.dtype == ei.dtype and gi.tobytes() == ei.tobytes()
            assert [t.dtype for t in gt] == [t.dtype for t in et]
            assert all(a.tobytes() == b.tobytes() for a, b in zip(gt, et))
        st = _stats(client, shm)
        assert st.output_slots == 3 and st.slot_bytes >= 3 * got[0][0].nbytes
        assert st.bytes_delivered >= 5 * got[0][0].nbytes
        assert wait_until(lambda: _stats(client, shm).leased_slots == 0)  # the stream ended: leases reclaimed
        client.close_session(inline)
        client.close_session(shm)


def test_leases_are_respected_and_stale_releases_ignored(served):
    server, path = served
    with augmentd.Client(server.addresses[0]) as client:
        session = client.open_session(_config(path, delivery="host_shm", prefetch=2))
        # Low level: no SlotSet, and a hold so large that nothing is released automatically.
        stream = BatchStream(client.stub, session.session_id, session_token=session.session_token, credits=8, hold=1 << 30)
        try:
            first, second = next(stream), next(stream)
            assert {first.lease.slot, second.lease.slot} == {0, 1}
            time.sleep(1.0)  # plenty of credits, but both slots are leased: nothing more may come
            assert stream.buffered == 0
            st = _stats(client, session)
            assert st.leased_slots == 2 and st.batches_produced == 2
            stale = batch_pb2.SlotLease(slot=first.lease.slot, generation=first.lease.generation + 1)
            stream.release([stale, batch_pb2.SlotLease(slot=9, generation=1)])
            time.sleep(0.7)
            assert stream.buffered == 0
            assert wait_until(lambda: _stats(client, session).stale_releases == 2)
            stream.release([first.lease])
            third = next(stream)
            assert third.batch_index == 2 and third.lease.slot == first.lease.slot
            assert third.lease.generation > first.lease.generation
            assert _stats(client, session).leased_slots == 2
        finally:
            stream.close()
        assert wait_until(lambda: _stats(client, session).leased_slots == 0)
        client.close_session(session)


def test_a_credit_message_also_returns_leases(served):
    server, path = served
    with augmentd.Client(server.addresses[0]) as client:
        session = client.open_session(_config(path, delivery="host_shm", prefetch=2))
        stream = BatchStream(client.stub, session.session_id, session_token=session.session_token, credits=2, hold=1 << 30, auto_credit=False)
        try:
            first, second = next(stream), next(stream)
            assert first.sent_unix_ns > 0 and second.sent_unix_ns >= first.sent_unix_ns
            assert abs(first.received_unix_ns - first.sent_unix_ns) < 60e9  # the same host's wall clock
            stream.grant(1)  # a credit alone: both slots are leased, nothing may come
            time.sleep(0.7)
            assert stream.buffered == 0
            stream.grant(0, [first.lease])  # the lease comes back inside a Credit message
            third = next(stream)
            assert third.batch_index == 2 and third.lease.slot == first.lease.slot
        finally:
            stream.close()
        client.close_session(session)


def test_scarce_slots_go_back_at_once_so_the_server_produces_during_the_step(served):
    # 2 slots, 1 held, credits 6 (the nnU-Net trainer's defaults): a retired slot must go back with the next credit
    # message right away, not after credits // 2 batches, or every next() waits for the round trip + production.
    server, path = served
    with augmentd.Client(server.addresses[0]) as client:
        session = client.open_session(_config(path, delivery="host_shm", prefetch=2))
        with client.stream_batches(session, credits=6, hold=1, max_batches=7) as stream:
            ready = []
            for _ in range(6):
                next(stream)
                time.sleep(0.4)  # a training step, far longer than producing one small batch
                ready.append(stream.buffered > 0)
        client.close_session(session)
    assert sum(ready[1:]) >= 4, ready


def test_hold_keeps_k_batches_and_must_leave_a_free_slot(served):
    server, path = served
    with augmentd.Client(server.addresses[0]) as client:
        session = client.open_session(_config(path, delivery="host_shm", prefetch=3))
        with pytest.raises(ValueError, match="hold"):
            client.stream_batches(session, hold=3)
        with client.stream_batches(session, max_batches=6, hold=2) as stream:
            held = []
            for b in stream:
                held.append(b)
                live = [h for h in held if not h.released]
                assert len(live) <= 2 and live[-1] is b
        client.close_session(session)


_HOLDER = textwrap.dedent("""
    import sys, time, augmentd
    client = augmentd.Client(sys.argv[1])
    session = client.open_session(augmentd.dataset_session_config(sys.argv[2], batch_size=2, seed=3,
                                  prefetch_depth=2, delivery="host_shm"))
    stream = client.stream_batches(session, credits=4)
    batch = next(stream)
    print(session.session_id, session.session_token, flush=True)
    time.sleep(600)
""")


def test_killed_client_leases_are_reclaimed_and_others_unaffected(served):
    server, path = served
    child = subprocess.Popen([sys.executable, "-c", _HOLDER, server.addresses[0], path], stdout=subprocess.PIPE,
                             text=True, env=client_env())
    try:
        session_id, _, token = child.stdout.readline().strip().partition(" ")
        assert session_id, "the holder process did not start"
        with augmentd.Client(server.addresses[0]) as client:
            client.remember_session(session_id, token)  # the holder hands its session over
            assert wait_until(lambda: client.stats(session_id).sessions[0].leased_slots == 2)
            other = client.open_session(_config(path, delivery="host_shm", seed=4))
            results = {}

            def consume():
                with client.stream_batches(other, max_batches=8) as s:
                    results["indices"] = [b.batch_index for b in s]

            t = threading.Thread(target=consume)
            t.start()
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=10)
            assert wait_until(lambda: client.stats(session_id).sessions[0].leased_slots == 0), server.output[-2000:]
            t.join(timeout=60)
            assert results.get("indices") == list(range(8))
            # The abandoned session still works: a new stream gets its slots.
            with client.stream_batches(session_id, max_batches=2) as s:
                assert len(list(s)) == 2
            client.close_session(session_id)
            client.close_session(other)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_close_session_frees_the_slots(served):
    server, path = served
    with augmentd.Client(server.addresses[0]) as client:
        session = client.open_session(_config(path, delivery="host_shm"))
        keys = [s.host_shm.key for s in session.response.output_slots]
        assert len(keys) == 3 and all(k.startswith(f"/augmentd-{server.proc.pid}-") for k in keys)
        assert all(os.path.exists("/dev/shm" + k) for k in keys)
        with client.stream_batches(session, max_batches=2) as stream:
            assert len(list(stream)) == 2
        final = client.close_session(session)
        assert final.output_slots == 3
        assert not any(os.path.exists("/dev/shm" + k) for k in keys)


def test_bad_delivery_requests_get_precise_codes(tmp_path):
    dataset = _write_dataset(tmp_path)
    path = str(dataset / "nnUNetPlans_3d_fullres")
    proc = _serve(tmp_path, "--max_session_memory_bytes=20000", "--device_memory_budget_bytes=60000")
    try:
        with augmentd.Client(proc.addresses[0]) as client:
            patch_shm = augmentd.patch_session_config([8, 8, 8], batch_size=2)
            patch_shm.patch.input_slots = 1  # patch mode takes slot delivery now; CUDA input slots need a GPU
            patch_shm.patch.input_slot_kind = server_info_pb2.DELIVERY_KIND_CUDA_IPC
            cases = [
                (_config(path, delivery="cuda_ipc"), grpc.StatusCode.INVALID_ARGUMENT, "config.delivery"),
                (patch_shm, grpc.StatusCode.INVALID_ARGUMENT, "config.patch.input_slot_kind"),
                (_config(path, delivery="host_shm", prefetch=4), grpc.StatusCode.RESOURCE_EXHAUSTED,
                 "max_session_memory_bytes"),
            ]
            for config, code, needle in cases:
                with pytest.raises(augmentd.AugmentdError) as err:
                    client.open_session(config)
                assert err.value.code == code and needle in err.value.details, err.value
            # Each session fits the per-session limit; the server-wide budget admits only so many.
            opened = []
            with pytest.raises(augmentd.AugmentdError) as err:
                for _ in range(10):
                    opened.append(client.open_session(_config(path, delivery="host_shm", prefetch=1)))
            assert err.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "device_memory_budget_bytes" in err.value.details
            assert 1 <= len(opened) < 10
            client.close_session(opened.pop())
            # Room again: at once when the close held the last reference to the session (CloseSession drops its
            # own before it answers); work still running for the session would let go a moment later: retry.

            def reopened():
                try:
                    opened.append(client.open_session(_config(path, delivery="host_shm", prefetch=1)))
                    return True
                except augmentd.AugmentdError as again:
                    if again.code != grpc.StatusCode.RESOURCE_EXHAUSTED:
                        raise
                    return False

            assert wait_until(reopened, timeout=20), "no room for a session 20 s after one was closed"
            for s in opened:
                client.close_session(s)
            assert client.health() == augmentd.HealthStatus.SERVING
    finally:
        assert proc.stop() == 0


def _patches(rng, b=2, shape=(24, 24, 24)):
    image = rng.standard_normal((b, 1, *shape)).astype(np.float32)
    seg = (rng.random((b, 1, *shape)) * 3).astype(np.int16)
    return image, seg


def test_patch_inputs_in_client_shared_memory(tmp_path):
    proc = _serve(tmp_path, "--allow_client_shm=true")
    rng = np.random.default_rng(0)
    try:
        with augmentd.Client(proc.addresses[0]) as client, augmentd.SharedInput("in", 1 << 20) as region:
            config = augmentd.patch_session_config([16, 16, 16], batch_size=2, seed=9)
            plain = client.open_session(config)
            patch = plain.initial_patch_size
            image, seg = _patches(rng, shape=patch)
            session = client.open_session(config, input_regions=[region])
            assert _stats(client, session).input_region_bytes == 1 << 20
            shm_image = region.array(0, image.shape, np.float32)
            shm_seg = region.array(image.nbytes, seg.shape, np.int16)
            shm_image[...] = image
            shm_seg[...] = seg
            by_ref = client.augment(session, region.tensor(shm_image, "image"), region.tensor(shm_seg, "segmentation"),
                                    batch_index=4)
            inline = client.augment(plain, image, seg, batch_index=4)
            assert by_ref.proto.image.WhichOneof("storage") == "inline_data"
            assert by_ref.image.tobytes() == inline.image.tobytes()
            assert all(a.tobytes() == b.tobytes() for a, b in zip(by_ref.targets, inline.targets))

            good_image = region.tensor(shm_image, "image")
            good_seg = region.tensor(shm_seg, "segmentation")

            def bad(mutate, needle):
                t = type(good_image)()
                t.CopyFrom(good_image)
                mutate(t)
                with pytest.raises(augmentd.AugmentdError) as err:
                    client.augment(session, t, good_seg)
                assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and needle in err.value.details, err.value

            bad(lambda t: setattr(t.host_shm, "region", "nope"), "image.host_shm.region")
            bad(lambda t: setattr(t.host_shm, "offset", (1 << 20) - 16), "image.host_shm.offset")
            bad(lambda t: setattr(t.host_shm, "byte_size", 12), "image.host_shm.byte_size")
            with pytest.raises(augmentd.AugmentdError) as err:  # refs need registered regions
                client.augment(plain, good_image, good_seg)
            assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and "image.host_shm.region" in err.value.details

            # Registration: the real size is checked, keys are validated, names are unique.
            big = region.region()
            big.byte_size = (1 << 20) + 1
            for regions, needle in [([big], "host_shm_regions[0].byte_size"),
                                    ([augmentd.v1.tensor_pb2.HostShmRegion(name="x", key="/etc/passwd", byte_size=1)],
                                     "host_shm_regions[0].key"),
                                    ([region, region], "host_shm_regions[1].name")]:
                with pytest.raises(augmentd.AugmentdError) as err:
                    client.open_session(config, input_regions=regions)
                assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and needle in err.value.details, err.value
            client.close_session(session)
            client.close_session(plain)
    finally:
        assert proc.stop() == 0


def test_client_regions_need_the_flag(served):
    server, _ = served
    with augmentd.Client(server.addresses[0]) as client, augmentd.SharedInput("in", 4096) as region:
        with pytest.raises(augmentd.AugmentdError) as err:
            client.open_session(augmentd.patch_session_config([16, 16, 16]), input_regions=[region])
        assert err.value.code == grpc.StatusCode.PERMISSION_DENIED and "--allow_client_shm" in err.value.details
