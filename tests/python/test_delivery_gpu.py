"""CUDA IPC delivery (issue 5) against the real augmentd binary on a GPU: IPC batches equal inline batches of the
same seed, a separate client process reads its batches in place (tensor data_ptr == the opened handle's base +
offset) and releases them, and a killed client's slots are reclaimed. Skipped without CUDA (torch) or when the
binary serves no CUDA device; run on the GPU machine with scripts/gpu-ipc-check.sh."""
import json
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from augmentd_server import ServerProcess, client_env, wait_until  # first: makes `augmentd` importable
from test_sessions import _write_dataset

import augmentd  # noqa: E402
from augmentd.v1 import server_info_pb2  # noqa: E402

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device (torch.cuda)")

IPC = server_info_pb2.DELIVERY_KIND_CUDA_IPC


@pytest.fixture
def served(tmp_path):
    dataset = _write_dataset(tmp_path)
    proc = ServerProcess(["--listen=127.0.0.1:0", "--device=cuda:0", f"--dataset_root={tmp_path}",
                          "--max_batch_size=4", "--batch_workers=2"])
    try:
        proc.addresses = proc.wait_for_serving()
        with augmentd.Client(proc.addresses[0]) as client:
            if IPC not in client.server_info().deliveries:
                pytest.skip("this augmentd serves no CUDA IPC (built without CUDA or no GPU)")
        yield proc, str(dataset / "nnUNetPlans_3d_fullres")
    finally:
        rc = proc.stop()
    assert rc == 0, f"augmentd exited with {rc}:\n{proc.output}"


def _config(path, delivery, seed=21, prefetch=3):
    return augmentd.dataset_session_config(path, batch_size=2, seed=seed, prefetch_depth=prefetch, device="cuda:0",
                                           delivery=delivery)


def test_ipc_batches_equal_inline_batches(served):
    server, path = served
    with augmentd.Client(server.addresses[0]) as client:
        inline = client.open_session(_config(path, "inline"))
        ipc = client.open_session(_config(path, "cuda_ipc"))
        assert inline.device == "cuda:0" and ipc.device == "cuda:0", server.output[-2000:]
        assert ipc.delivery == IPC and len(ipc.response.output_slots) == 3
        for slot in ipc.response.output_slots:
            assert slot.cuda_ipc.byte_size % (2 << 20) == 0 and slot.cuda_ipc.device_uuid.startswith("GPU-")
            assert len(slot.cuda_ipc.mem_handle) == 64 and len(slot.cuda_ipc.event_handle) == 64
        with client.stream_batches(inline, max_batches=4) as s:
            expected = [(b.image.copy(), [t.copy() for t in b.targets]) for b in s]
        with client.stream_batches(ipc, max_batches=4) as s:
            for b, (ei, et) in zip(s, expected):
                image, targets = b.torch()
                assert image.is_cuda and image.data_ptr() == ipc.slots.data_ptr(b.proto.image)
                assert b.sample_indices == [2 * b.batch_index, 2 * b.batch_index + 1] and all(b.case_ids)
                assert np.array_equal(image.cpu().numpy(), ei)
                assert all(np.array_equal(t.cpu().numpy(), e) for t, e in zip(targets, et))
        st = client.stats(ipc).sessions[0]
        assert st.output_slots == 3 and st.device_memory_bytes == st.slot_bytes > 0
        client.close_session(inline)
        client.close_session(ipc)


_READER = textwrap.dedent("""
    import json, sys, time, torch, augmentd
    client = augmentd.Client(sys.argv[1])
    session = client.open_session(augmentd.dataset_session_config(sys.argv[2], batch_size=2, seed=int(sys.argv[3]),
                                  prefetch_depth=2, device="cuda:0", delivery="cuda_ipc"))
    print(json.dumps({"session": session.session_id, "token": session.session_token}), flush=True)
    stream = client.stream_batches(session, credits=4)
    out = []
    for _ in range(3):
        b = next(stream)
        image, targets = b.torch()
        base = session.slots.slots[b.proto.image.cuda_ipc.region].base
        out.append({"zero_copy": image.data_ptr() == base + b.proto.image.cuda_ipc.offset,
                    "device": str(image.device), "sum": float(image.double().sum()),
                    "labels": int(targets[0].long().sum())})
    print(json.dumps(out), flush=True)
    if sys.argv[4] == "hold":
        time.sleep(600)
    stream.close()
    client.close_session(session)
""")


def test_separate_process_reads_in_place_and_releases(served):
    server, path = served
    child = subprocess.run([sys.executable, "-c", _READER, server.addresses[0], path, "21", "exit"],
                           capture_output=True, text=True, env=client_env(), timeout=120)
    assert child.returncode == 0, child.stderr
    lines = child.stdout.strip().splitlines()
    got = json.loads(lines[-1])
    assert all(g["zero_copy"] and g["device"] == "cuda:0" for g in got), got
    with augmentd.Client(server.addresses[0]) as client:
        inline = client.open_session(_config(path, "inline", prefetch=2))
        with client.stream_batches(inline, max_batches=3) as s:
            for b, g in zip(s, got):
                assert abs(float(b.image.astype(np.float64).sum()) - g["sum"]) <= 1e-6 * max(1.0, abs(g["sum"]))
                assert int(b.targets[0].astype(np.int64).sum()) == g["labels"]
        client.close_session(inline)


def test_killed_ipc_client_slots_are_reclaimed(served):
    server, path = served
    child = subprocess.Popen([sys.executable, "-c", _READER, server.addresses[0], path, "5", "hold"],
                             stdout=subprocess.PIPE, text=True, env=client_env())
    try:
        handed = json.loads(child.stdout.readline())
        session_id = handed["session"]
        assert json.loads(child.stdout.readline())[0]["zero_copy"]
        with augmentd.Client(server.addresses[0]) as client:
            client.remember_session(session_id, handed["token"])  # the reader hands its session over
            assert wait_until(lambda: client.stats(session_id).sessions[0].leased_slots == 2)
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=10)
            assert wait_until(lambda: client.stats(session_id).sessions[0].leased_slots == 0), server.output[-2000:]
            other = client.open_session(_config(path, "cuda_ipc", prefetch=2))
            with client.stream_batches(other, max_batches=3) as s:
                assert [b.batch_index for b in s] == [0, 1, 2]
            with client.stream_batches(session_id, max_batches=2) as s:  # the orphaned session still works
                assert len(list(s)) == 2
            client.close_session(other)
            client.close_session(session_id)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_patch_inputs_by_cuda_ipc_equal_inline(tmp_path):
    from augmentd.cuda_ipc import cuda_input_region
    from augmentd.v1 import tensor_pb2

    proc = ServerProcess(["--listen=127.0.0.1:0", "--device=cuda:0", "--allow_client_shm=true"])
    try:
        with augmentd.Client(proc.wait_for_serving()[0]) as client:
            config = augmentd.patch_session_config([32, 32, 32], batch_size=2, seed=3, device="cuda:0")
            plain = client.open_session(config)
            if plain.device != "cuda:0":
                pytest.skip("the CUDA engine does not cover this pipeline here")
            shape = (2, 1, *plain.initial_patch_size)
            rng = np.random.default_rng(1)
            image = rng.standard_normal(shape).astype(np.float32)
            seg = (rng.random(shape) * 3).astype(np.int16)
            buf = torch.empty(image.nbytes + seg.nbytes, dtype=torch.uint8, device="cuda:0")
            buf[:image.nbytes].view(torch.float32).copy_(torch.from_numpy(image).reshape(-1))
            buf[image.nbytes:].view(torch.int16).copy_(torch.from_numpy(seg).reshape(-1))
            torch.cuda.synchronize()
            region, base = cuda_input_region("in", buf)
            session = client.open_session(config, input_regions=[region])

            def ref(name, dtype, offset, nbytes):
                return tensor_pb2.Tensor(name=name, dtype=dtype, shape=list(shape),
                                         cuda_ipc=tensor_pb2.CudaIpcRef(region="in", offset=base + offset,
                                                                        byte_size=nbytes))

            by_ref = client.augment(session, ref("image", tensor_pb2.DTYPE_FLOAT32, 0, image.nbytes),
                                    ref("segmentation", tensor_pb2.DTYPE_INT16, image.nbytes, seg.nbytes), batch_index=2)
            inline = client.augment(plain, image, seg, batch_index=2)
            assert np.array_equal(by_ref.image, inline.image)
            assert all(np.array_equal(a, b) for a, b in zip(by_ref.targets, inline.targets))
            with pytest.raises(augmentd.AugmentdError) as err:
                client.augment(session, ref("image", tensor_pb2.DTYPE_FLOAT32, region.byte_size, image.nbytes),
                               ref("segmentation", tensor_pb2.DTYPE_INT16, image.nbytes, seg.nbytes))
            assert "image.cuda_ipc.offset" in err.value.details
            client.close_session(session)
            client.close_session(plain)
    finally:
        assert proc.stop() == 0


def test_cuda_dataset_batches_match_the_cpu_engine(served):
    """Dataset mode on cuda:0 with CUDA IPC delivery against the CPU engine: same seed, so the same cases and boxes;
    labels identical except fp16 vote ties (≤ 1e-5 of the voxels), images within 1e-4 of their range."""
    server, path = served
    with augmentd.Client(server.addresses[0]) as client:
        cpu = client.open_session(augmentd.dataset_session_config(path, batch_size=2, seed=33, device="cpu"))
        ipc = client.open_session(_config(path, "cuda_ipc", seed=33))
        assert cpu.device == "cpu" and ipc.device == "cuda:0"
        with client.stream_batches(cpu, max_batches=3) as s:
            expected = [(b.image.copy(), [t.copy() for t in b.targets]) for b in s]
        with client.stream_batches(ipc, max_batches=3) as s:
            got = 0
            for b, (ei, et) in zip(s, expected):
                image, targets = b.torch()
                scale = max(float(ei.max() - ei.min()), 1e-6)
                assert float(np.abs(image.cpu().numpy() - ei).max()) <= 1e-4 * scale
                for t, e in zip(targets, et):
                    assert t.shape == e.shape and float((t.cpu().numpy() != e).mean()) <= 1e-5
                got += 1
        assert got == 3
        client.close_session(cpu)
        client.close_session(ipc)
