"""Reconnect and resume (augmentd.ResumingBatches): a server killed mid-training and restarted on the same address;
the client goes on with the next batch index and receives exactly the batches an uninterrupted run receives."""
import signal

import numpy as np

from augmentd_server import ServerProcess  # first: makes `augmentd` importable

import augmentd  # noqa: E402
from test_sessions import _write_dataset  # noqa: E402


def _server(tmp_path, sock):
    proc = ServerProcess([f"--listen=unix://{sock}", "--device=cpu", f"--dataset_root={tmp_path}",
                          "--batch_workers=2"])
    proc.wait_for_serving()
    return proc


def test_resumes_the_same_batch_sequence_across_a_server_restart(tmp_path):
    dataset = _write_dataset(tmp_path)
    sock = tmp_path / "augmentd.sock"
    config = augmentd.dataset_session_config(str(dataset / "nnUNetPlans_3d_fullres"), batch_size=2, seed=11)
    proc = _server(tmp_path, sock)
    try:
        with augmentd.Client(f"unix://{sock}") as client:  # the uninterrupted reference run
            session = client.open_session(config)
            with client.stream_batches(session, credits=2, max_batches=6) as stream:
                reference = [(b.image.copy(), b.targets[0].copy()) for b in stream]
            client.close_session(session)
        got = []
        with augmentd.ResumingBatches(f"unix://{sock}", config, credits=2, reconnect_timeout=30) as batches:
            for _ in range(3):
                b = next(batches)
                got.append((b.batch_index, b.image.copy(), b.targets[0].copy()))
            assert proc.stop(sig=signal.SIGKILL) != 0  # the server dies holding the session
            proc = _server(tmp_path, sock)            # a new process on the same address: the session is unknown
            for _ in range(3):
                b = next(batches)
                got.append((b.batch_index, b.image.copy(), b.targets[0].copy()))
            assert batches.reconnects >= 1 and batches.next_batch_index == 6
        assert [g[0] for g in got] == list(range(6))
        for (index, image, target), (ref_image, ref_target) in zip(got, reference):
            assert np.array_equal(image, ref_image), f"batch {index} image differs after the restart"
            assert np.array_equal(target, ref_target), f"batch {index} labels differ after the restart"
    finally:
        proc.stop()


def test_non_retryable_errors_are_raised_at_once(tmp_path):
    _write_dataset(tmp_path)
    sock = tmp_path / "augmentd.sock"
    proc = _server(tmp_path, sock)
    try:
        bad = augmentd.dataset_session_config(str(tmp_path / "missing"), batch_size=2)
        batches = augmentd.ResumingBatches(f"unix://{sock}", bad, reconnect_timeout=5)
        try:
            next(batches)
            raise AssertionError("a missing dataset must fail")
        except augmentd.AugmentdError as err:
            assert err.code.name in ("NOT_FOUND", "INVALID_ARGUMENT", "PERMISSION_DENIED")
            assert batches.reconnects == 0
        finally:
            batches.close()
    finally:
        proc.stop()
