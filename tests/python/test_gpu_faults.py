"""GPU faults against the real augmentd binary on a CUDA device (issue 9): a session whose CUDA IPC output slots
cannot fit in the GPU's free memory — with no --device_memory_budget_bytes or --max_session_memory_bytes set, so
that only the GPU itself can refuse it — gets RESOURCE_EXHAUSTED naming GPU memory; the server stays SERVING, a
session opened before and one opened after still stream the right batches, and the device's free memory returns
to its level before the failed open (the slots allocated before the failure are freed).

Skipped without CUDA (torch) or when the binary serves no CUDA IPC. It fills the whole GPU for a moment: run it
alone on the GPU machine (see the lead's command in the report / scripts), e.g.
    AUGMENTD_BIN=build-gpu/server/augmentd python3 -m pytest tests/python/test_gpu_faults.py -v
"""
import json
import math
import shutil
import time

import numpy as np
import pytest

from augmentd_server import ServerProcess  # first: makes `augmentd` importable
from test_sessions import _write_dataset

import augmentd  # noqa: E402
import grpc  # noqa: E402
from augmentd.v1 import server_info_pb2  # noqa: E402

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device (torch.cuda)")

IPC = server_info_pb2.DELIVERY_KIND_CUDA_IPC
BIG_PATCH = 128   # plan patch of the oversized session's dataset (cube edge)
BIG_BATCH = 64    # the server's default max_batch_size
SLACK = 256 << 20  # free-memory tolerance (other processes, driver bookkeeping)


def _write_big_patch_dataset(root):
    """Dataset001_Py (plan patch 8³) and a copy under root/big with a plan patch of BIG_PATCH³ (same small cases:
    its patches are mostly padding). Returns both dataset folders."""
    ds = _write_dataset(root)
    big = root / "big" / ds.name
    shutil.copytree(ds, big)
    plans = json.loads((big / "nnUNetPlans.json").read_text())
    plans["configurations"]["3d_fullres"]["patch_size"] = [BIG_PATCH] * 3
    (big / "nnUNetPlans.json").write_text(json.dumps(plans))
    return ds, big


def _free_bytes():
    torch.cuda.synchronize()
    return torch.cuda.mem_get_info(0)[0]


def _config(path, delivery="inline", batch=2, prefetch=2, seed=7):
    return augmentd.dataset_session_config(path, batch_size=batch, seed=seed, prefetch_depth=prefetch,
                                           device="cuda:0", delivery=delivery)


def _batches(client, session, n):
    with client.stream_batches(session, max_batches=n) as s:
        return [(b.batch_index, b.image.copy(), [t.copy() for t in b.targets]) for b in s]


def test_gpu_out_of_memory_at_admission(tmp_path):
    small, big = _write_big_patch_dataset(tmp_path)
    total = torch.cuda.mem_get_info(0)[1]
    # Image bytes alone (a lower bound of a slot): 1.5x the whole GPU in slots; the server's limits let it through.
    slot_lower_bound = BIG_BATCH * BIG_PATCH ** 3 * 4
    prefetch = math.ceil(1.5 * total / slot_lower_bound)
    proc = ServerProcess(["--listen=127.0.0.1:0", "--device=cuda:0", f"--dataset_root={tmp_path}",
                          f"--max_batch_size={BIG_BATCH}", f"--max_prefetch_depth={prefetch}",
                          "--max_inflight_bytes_per_session=0", "--batch_workers=2"])
    try:
        address = proc.wait_for_serving()[0]
        with augmentd.Client(address) as client:
            if IPC not in client.server_info().deliveries:
                pytest.skip("this augmentd serves no CUDA IPC (built without CUDA or no GPU)")
            path = str(small / "nnUNetPlans_3d_fullres")
            before = client.open_session(_config(path))
            assert before.device == "cuda:0", proc.output[-2000:]
            first = _batches(client, before, 2)  # also warms up the server's CUDA context and kernels
            free_before = _free_bytes()

            with pytest.raises(augmentd.AugmentdError) as err:
                client.open_session(_config(str(big / "nnUNetPlans_3d_fullres"), delivery="cuda_ipc",
                                            batch=BIG_BATCH, prefetch=prefetch), timeout=300)
            details = err.value.details
            assert err.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED, err.value
            assert "out of memory" in details.lower() or "gpu memory" in details.lower(), details
            assert "max_" not in details and "budget" not in details, details  # the GPU refused, not a limit

            assert client.health() == augmentd.HealthStatus.SERVING
            # The slots allocated before the failure were freed: free memory comes back (allow a few seconds).
            deadline = time.monotonic() + 15
            while _free_bytes() < free_before - SLACK and time.monotonic() < deadline:
                time.sleep(0.5)
            free_after = _free_bytes()
            assert free_after >= free_before - SLACK, (free_before, free_after, proc.output[-2000:])

            # The session opened before keeps streaming; one opened after (same seed) gets the same batches as it,
            # index by index (batches are a pure function of config, seed and batch index).
            more = _batches(client, before, 2)
            assert len(more) == 2 and more[0][0] >= 2 and more[1][0] > more[0][0], [m[0] for m in more]
            after = client.open_session(_config(path))
            again = {b[0]: b for b in _batches(client, after, more[1][0] + 1)}
            for bi, image, targets in first + more:
                assert bi in again and np.array_equal(again[bi][1], image), bi
                assert all(np.array_equal(a, b) for a, b in zip(again[bi][2], targets)), bi
            client.close_session(before)
            client.close_session(after)
            assert client.health() == augmentd.HealthStatus.SERVING
    finally:
        rc = proc.stop()
    assert rc == 0, f"augmentd exited with {rc}:\n{proc.output[-4000:]}"
