"""Scheduling of the real augmentd binary: weighted fair sharing of one CPU worker between two saturated
patch-mode sessions (SessionConfig.weight 1 vs 3), and the per-session in-flight limit answered with
RESOURCE_EXHAUSTED naming max_inflight_batches_per_session."""
import concurrent.futures
import threading
import time

import grpc
import numpy as np
import pytest

from augmentd_server import ServerProcess  # first: makes `augmentd` importable

import augmentd  # noqa: E402


def _server(tmp_path, *flags):
    proc = ServerProcess(["--listen=127.0.0.1:0", "--device=cpu", f"--dataset_root={tmp_path}", "--batch_workers=1",
                          *flags])
    proc.addresses = proc.wait_for_serving()
    return proc


@pytest.fixture
def one_worker(tmp_path):
    proc = _server(tmp_path, "--max_inflight_batches_per_session=1")
    try:
        yield proc
    finally:
        assert proc.stop() == 0, proc.output


def test_weighted_sessions_share_one_worker_by_weight(tmp_path):
    """Two patch-mode sessions (weights 1 and 3) each keep 5 Augment calls outstanding on one worker, so both
    queues stay backlogged and the worker is the bottleneck: completions follow the weights."""
    server = _server(tmp_path)
    try:
        with augmentd.Client(server.addresses[0]) as client:
            sessions = []
            for weight in (1.0, 3.0):
                config = augmentd.patch_session_config([20, 20, 20], batch_size=2, seed=int(weight))
                config.weight = weight
                sessions.append(client.open_session(config))
            shape = (2, 1, *sessions[0].initial_patch_size)
            rng = np.random.RandomState(0)
            image = rng.randn(*shape).astype(np.float32)
            seg = rng.randint(0, 3, size=shape).astype(np.int16)
            stop = threading.Event()
            counts = [0, 0]
            lock = threading.Lock()

            def caller(i):
                while not stop.is_set():
                    client.augment(sessions[i], image, seg, 0)
                    with lock:
                        if not stop.is_set():
                            counts[i] += 1

            threads = [threading.Thread(target=caller, args=(i,)) for i in (0, 1) for _ in range(5)]
            for t in threads:
                t.start()
            time.sleep(1.0)  # warm-up: every caller has its call queued
            with lock:
                base = list(counts)
            deadline = time.monotonic() + 20
            while sum(counts) - sum(base) < 80 and time.monotonic() < deadline:
                time.sleep(0.05)
            with lock:
                window = [counts[0] - base[0], counts[1] - base[1]]
                stop.set()
            for t in threads:
                t.join(timeout=60)
            assert sum(window) >= 40, window
            ratio = window[1] / max(1, window[0])
            assert 2.2 <= ratio <= 4.0, window
            for s in sessions:
                client.close_session(s)
    finally:
        assert server.stop() == 0, server.output


def test_inflight_limit_refuses_extra_augment_calls(one_worker):
    with augmentd.Client(one_worker.addresses[0]) as client:
        assert client.server_info().limits.max_inflight_batches_per_session == 1  # reported by GetServerInfo
        session = client.open_session(augmentd.patch_session_config([24, 24, 24], batch_size=4, seed=1))
        shape = (4, 1, *session.initial_patch_size)
        rng = np.random.RandomState(0)
        image = rng.randn(*shape).astype(np.float32)
        seg = rng.randint(0, 3, size=shape).astype(np.int16)
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            futures = [pool.submit(client.augment, session, image, seg, i) for i in range(8)]
            ok, refused = 0, []
            for f in futures:
                try:
                    f.result()
                    ok += 1
                except augmentd.AugmentdError as err:
                    refused.append(err)
        assert ok >= 1
        assert refused, "8 concurrent calls with max_inflight_batches_per_session=1 must refuse some"
        for err in refused:
            assert err.code == grpc.StatusCode.RESOURCE_EXHAUSTED, err
            assert "max_inflight_batches_per_session" in str(err), err
        assert client.augment(session, image, seg, 0).batch_index == 0  # the session still works
        client.close_session(session)


def test_prefetch_that_cannot_fit_the_inflight_byte_limit_is_refused_at_open(tmp_path):
    from test_sessions import _write_dataset

    dataset = _write_dataset(tmp_path) / "nnUNetPlans_3d_fullres"  # batches of 2 x 8^3: ~6.4 kB each
    proc = _server(tmp_path, "--max_inflight_bytes_per_session=20000")
    try:
        with augmentd.Client(proc.addresses[0]) as client:
            config = augmentd.dataset_session_config(str(dataset), batch_size=2, seed=1)
            config.prefetch_depth = 4
            with pytest.raises(augmentd.AugmentdError) as err:
                client.open_session(config)
            assert err.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "max_inflight_bytes_per_session" in str(err.value) and "prefetch_depth" in str(err.value)
            config.prefetch_depth = 2
            session = client.open_session(config)
            with client.stream_batches(session, credits=2, max_batches=3) as stream:
                assert [b.batch_index for b in stream] == [0, 1, 2]
            client.close_session(session)
    finally:
        assert proc.stop() == 0, proc.output
