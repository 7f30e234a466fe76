"""Patch mode over StreamPatches on a GPU (issue 22), against the real augmentd binary on cuda:0: CUDA input slots +
CUDA IPC output slots equal the unary inline Augment call of the same CUDA session bit for bit (also host shm in/out
and inline on that session), PatchAugmenter's CUDA round trip gives CUDA tensors on the session's GPU that view the
output slots, a tensor on another GPU is refused, and 1,000 calls leave GPU memory and /dev/shm at their baseline.
Skipped without CUDA (torch) or when the binary serves no CUDA device; run on the GPU machine with
scripts/gpu-patch.sh."""
import os
import time

import numpy as np
import pytest

from augmentd_server import ServerProcess  # first: makes `augmentd` importable
from test_patch_stream import _settled_stats

import augmentd  # noqa: E402
from augmentd.v1 import server_info_pb2  # noqa: E402

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device (torch.cuda)")

IPC = server_info_pb2.DELIVERY_KIND_CUDA_IPC
SHM = server_info_pb2.DELIVERY_KIND_HOST_SHM
INLINE = server_info_pb2.DELIVERY_KIND_INLINE


@pytest.fixture(scope="module")
def server():
    proc = ServerProcess(["--listen=127.0.0.1:0", "--device=cuda:0", "--max_batch_size=4", "--batch_workers=2"])
    try:
        proc.addresses = proc.wait_for_serving()
        with augmentd.Client(proc.addresses[0]) as client:
            if IPC not in client.server_info().deliveries:
                pytest.skip("this augmentd serves no CUDA IPC (built without CUDA or no GPU)")
        yield proc
    finally:
        rc = proc.stop()
    assert rc == 0, f"augmentd exited with {rc}:\n{proc.output}"


def _config(patch=(32, 32, 32), seed=4, batch_size=2, delivery=None, slot_kind=None):
    config = augmentd.patch_session_config(patch, batch_size=batch_size, seed=seed, device="cuda:0",
                                           deep_supervision_scales=[[1, 1, 1], [0.5, 0.5, 0.5], [0.25, 0.25, 0.25]])
    if delivery is not None:
        config.delivery = delivery
    if slot_kind is not None:
        config.patch.input_slot_kind = slot_kind
    return config


def _patches(initial, b, seed):
    rng = np.random.default_rng(seed)
    image = rng.standard_normal((b, 1, *initial)).astype(np.float32)
    seg = (rng.random((b, 1, *initial)) * 3).astype(np.int16)
    return image, seg


@pytest.mark.parametrize("delivery,slot_kind,host_inputs",
                         [(None, None, False), (None, None, True), (SHM, SHM, False), (SHM, SHM, True),
                          (IPC, SHM, False), (SHM, IPC, False), (INLINE, None, False), (INLINE, None, True)],
                         ids=["cuda_in-cuda_out", "cuda_in-cuda_out-numpy", "shm_in-shm_out", "shm_in-shm_out-numpy",
                              "shm_in-cuda_out", "cuda_in-shm_out", "cuda_in-inline_out", "inline_numpy"])
def test_cuda_patch_mode_equals_inline_bit_for_bit(server, delivery, slot_kind, host_inputs):
    """Copies into CUDA input slots are handed over by the slot's event (numpy inputs: on the augmenter's own
    stream). Host shm slots of a CUDA session are page-locked: inputs go straight from the input slot to the device
    and the batch straight into the output slot (numpy inputs: the client's threaded copy into the slot). Inline
    requests carry the bytes encoded by augmentd.wire and inline results view the received message."""
    with augmentd.Client(server.addresses[0]) as client:
        ref = client.open_session(_config())
        if ref.device != "cuda:0":
            pytest.skip("the CUDA engine does not cover this pipeline here")
        inputs = [(5, *_patches(ref.initial_patch_size, 2, 1)), (6, *_patches(ref.initial_patch_size, 1, 2)),
                  (11, *_patches(ref.initial_patch_size, 2, 3))]
        expected = []
        for index, image, seg in inputs:
            b = client.augment(ref, image, seg, batch_index=index)
            expected.append((b.image.copy(), [t.copy() for t in b.targets]))
        client.close_session(ref)
        inline = delivery == INLINE and host_inputs
        with augmentd.PatchAugmenter(client, _config(delivery=delivery, slot_kind=slot_kind), depth=3,
                                     inline=inline) as aug:
            assert aug.device == "cuda:0"
            kinds = {s.WhichOneof("region") for s in aug.session.response.input_slots}
            assert kinds == (set() if inline else {"host_shm" if slot_kind == SHM else "cuda_ipc"})
            if host_inputs:
                futures = [aug.submit(im, sg, batch_index=i) for i, im, sg in inputs]
            else:
                futures = [aug.submit(torch.from_numpy(im).cuda(), torch.from_numpy(sg).cuda(), batch_index=i)
                           for i, im, sg in inputs]
            for future, (eimage, etargets) in zip(futures, expected):
                image, targets = aug.result(future)
                assert image.is_cuda == (aug.session.delivery == IPC)  # host tensors for host shm / inline delivery
                if aug.session.delivery == IPC:
                    assert image.device == torch.device("cuda:0")
                    assert image.data_ptr() == aug.session.slots.data_ptr(future._batch.proto.image)
                assert np.array_equal(image.cpu().numpy(), eimage)
                assert all(np.array_equal(t.cpu().numpy(), e) for t, e in zip(targets, etargets))


def test_patch_augmenter_cuda_round_trip_and_device_check(server):
    with augmentd.Client(server.addresses[0]) as client:
        config = _config(seed=9)
        with augmentd.PatchAugmenter(client, config) as aug:
            if aug.device != "cuda:0":
                pytest.skip("the CUDA engine does not cover this pipeline here")
            image, seg = _patches(aug.patch_size, 2, 7)
            ti, ts = torch.from_numpy(image).cuda(), torch.from_numpy(seg).cuda()
            out, targets = aug(ti, ts)
            assert out.is_cuda and all(t.is_cuda for t in targets) and tuple(out.shape) == (2, 1, 32, 32, 32)
            first = out.clone()  # the view is valid until the next result is taken (hold=1)
            again, _ = aug(ti, ts, batch_index=0)  # replay of the first batch
            assert torch.equal(again, first)
            # Host tensors are accepted (copied host → device into the slot).
            host, _ = aug(image, seg, batch_index=0)
            assert host.is_cuda
            if torch.cuda.device_count() > 1:
                with pytest.raises(ValueError, match="session runs on cuda:0"):
                    aug.submit(ti.to("cuda:1"), ts.to("cuda:1"))
            with pytest.raises(ValueError, match="does not fit the session's input"):
                aug.submit(ti[:, :, 1:], ts[:, :, 1:])


def _shm_names(pid):
    return sorted(n for n in os.listdir("/dev/shm") if n.startswith(f"augmentd-{pid}-"))


def test_1000_cuda_calls_leave_gpu_memory_and_shm_at_baseline(server):
    with augmentd.Client(server.addresses[0]) as client:
        config = _config(patch=(16, 16, 16), batch_size=1, seed=2)
        torch.cuda.init()
        shm = _shm_names(server.proc.pid)
        for _ in range(2):  # warm: CUDA contexts, workers, the IPC opener
            with augmentd.PatchAugmenter(client, config) as aug:
                aug(*_patches(aug.patch_size, 1, 0))
        torch.cuda.synchronize()
        free0, _ = torch.cuda.mem_get_info(0)  # device-wide: the server's allocations count
        with augmentd.PatchAugmenter(client, config) as aug:
            image, seg = _patches(aug.patch_size, 1, 0)
            ti, ts = torch.from_numpy(image).cuda(), torch.from_numpy(seg).cuda()
            start = time.monotonic()
            for _ in range(1000):
                aug(ti, ts)
                assert time.monotonic() - start < 240
            st = _settled_stats(client, aug.session, 1000)
            assert st.batches_produced >= 1000 and st.leased_slots <= 1 and st.stale_releases == 0
        del ti, ts
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        deadline = time.monotonic() + 10
        while True:
            free1, _ = torch.cuda.mem_get_info(0)
            if free1 >= free0 - (64 << 20) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert free1 >= free0 - (64 << 20), f"GPU free memory {free0 >> 20} MiB -> {free1 >> 20} MiB"
        assert _shm_names(server.proc.pid) == shm
