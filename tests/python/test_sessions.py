"""The augmentd Python client (sessions, StreamBatches with credits, patch-mode Augment) against the real
augmentd binary on a tiny nnU-Net-style preprocessed dataset written here (unpacked .npy, numpy only)."""
import json

import numpy as np
import pytest

from augmentd_server import ServerProcess, wait_until  # first: makes `augmentd` importable

import augmentd  # noqa: E402
from augmentd.v1 import pipeline_pb2, tensor_pb2  # noqa: E402

import grpc  # noqa: E402


def _write_dataset(root):
    """Dataset001_Py: 3 cases, 1 channel, labels {0, 1, 2}, plan patch 8³, strides → DS scales 1, 1/2."""
    ds = root / "Dataset001_Py"
    data = ds / "nnUNetPlans_3d_fullres"
    data.mkdir(parents=True)
    (ds / "nnUNetPlans.json").write_text(json.dumps({
        "plans_name": "nnUNetPlans", "transpose_forward": [0, 1, 2],
        "configurations": {"3d_fullres": {
            "data_identifier": "nnUNetPlans_3d_fullres", "batch_size": 2, "patch_size": [8, 8, 8],
            "spacing": [1.0, 1.0, 1.0], "normalization_schemes": ["ZScoreNormalization"],
            "use_mask_for_norm": [False],
            "architecture": {"arch_kwargs": {"strides": [[1, 1, 1], [2, 2, 2], [2, 2, 2]]}}}}}))
    (ds / "dataset.json").write_text(json.dumps({
        "channel_names": {"0": "CT"}, "labels": {"background": 0, "a": 1, "b": 2}, "numTraining": 3,
        "file_ending": ".nii.gz"}))
    rng = np.random.RandomState(0)
    for i, shape in enumerate([(12, 10, 14), (16, 12, 10), (9, 11, 13)]):
        img = rng.randn(1, *shape).astype(np.float32)
        seg = np.zeros((1, *shape), np.int16)
        seg[0, 2:5, 2:5, 2:5] = 1
        seg[0, -3:, -3:, -3:] = 2
        np.save(data / f"c{i}.npy", img)
        np.save(data / f"c{i}_seg.npy", seg)
    return ds


@pytest.fixture
def served(tmp_path):
    """(server, dataset folder): augmentd on TCP + unix socket with --dataset_root tmp_path."""
    dataset = _write_dataset(tmp_path)
    sock = tmp_path / "augmentd.sock"
    proc = ServerProcess(["--listen=127.0.0.1:0", f"--listen=unix://{sock}", "--device=cpu",
                          f"--dataset_root={tmp_path}", "--max_batch_size=4", "--batch_workers=2"])
    try:
        proc.addresses = proc.wait_for_serving()
        yield proc, dataset
    finally:
        rc = proc.stop()
    assert rc == 0, f"augmentd exited with {rc} after SIGTERM:\n{proc.output}"


@pytest.mark.parametrize("which", [0, 1], ids=["tcp", "unix"])
def test_dataset_mode_stream(served, which):
    server, dataset = served
    with augmentd.Client(server.addresses[which]) as client:
        session = client.open_session(augmentd.dataset_session_config(
            str(dataset / "nnUNetPlans_3d_fullres"), batch_size=2, seed=5, name="pytest"))
        assert session.device == "cpu"
        assert len(session.initial_patch_size) == 3
        with client.stream_batches(session, credits=3, max_batches=6) as stream:
            batches = list(stream)
        assert stream.end is not None and stream.end.next_batch_index == 6
        assert [b.batch_index for b in batches] == list(range(6))
        for b in batches:
            assert b.session_id == session.session_id
            assert b.image.shape == (2, 1, 8, 8, 8) and b.image.dtype == np.float32
            assert [t.shape for t in b.targets] == [(2, 1, 8, 8, 8), (2, 1, 4, 4, 4)]
            assert b.targets[0].dtype == np.int16
            assert set(np.unique(b.targets[0]).tolist()) <= {0, 1, 2}
            assert b.sample_indices == [2 * b.batch_index, 2 * b.batch_index + 1]
            assert set(b.case_ids) <= {"c0", "c1", "c2"}
            assert np.isfinite(b.image).all()
        image, targets = batches[0].torch()
        assert tuple(image.shape) == (2, 1, 8, 8, 8) and len(targets) == 2
        # Resume: the session continues at batch 6; a new session replays batch 3 bit for bit.
        with client.stream_batches(session, credits=1, max_batches=1) as stream:
            assert [b.batch_index for b in stream] == [6]
        replay = client.open_session(session.config, start_batch_index=3)
        with client.stream_batches(replay, credits=2, max_batches=1) as stream:
            (again,) = list(stream)
        assert again.batch_index == 3
        assert np.array_equal(again.image, batches[3].image)
        assert np.array_equal(again.targets[0], batches[3].targets[0])
        stats = client.close_session(session)
        assert stats.batches_produced == 7
        # Server-side timings of the produced batches: reading (dataset mode) and augmentation.
        assert stats.load_latency.count == 7 and stats.compute_latency.count == 7
        assert 0 < stats.compute_latency.p50_us <= stats.compute_latency.max_us
        assert 0 < stats.load_latency.p50_us <= stats.load_latency.p99_us <= stats.load_latency.max_us
        line = augmentd.sessions.latency_line(stats)
        assert line.startswith("load ") and "compute " in line and line.endswith("(p50/p99)")
        client.close_session(replay)
        with pytest.raises(augmentd.AugmentdError) as err:
            client.close_session(session)
        assert err.value.code == grpc.StatusCode.FAILED_PRECONDITION


def test_da5_preset_session(served):
    """The nnunet_da5 preset (nnUNetTrainerDA5's pipeline) serves dataset-mode batches of the plan's patch."""
    server, dataset = served
    with augmentd.Client(server.addresses[0]) as client:
        config = augmentd.dataset_session_config(str(dataset / "nnUNetPlans_3d_fullres"), batch_size=2, seed=3,
                                                 preset=pipeline_pb2.PRESET_NNUNET_DA5)
        session = client.open_session(config)
        with client.stream_batches(session, credits=2, max_batches=2) as stream:
            batches = list(stream)
        assert [b.batch_index for b in batches] == [0, 1]
        for b in batches:
            assert b.image.shape == (2, 1, 8, 8, 8) and np.isfinite(b.image).all()
            assert set(np.unique(b.targets[0]).tolist()) <= {0, 1, 2}
        default = client.open_session(augmentd.dataset_session_config(
            str(dataset / "nnUNetPlans_3d_fullres"), batch_size=2, seed=3))
        with client.stream_batches(default, credits=1, max_batches=1) as stream:
            (first,) = list(stream)
        assert not np.array_equal(first.image, batches[0].image)  # a different pipeline, not the default one
        client.close_session(session)
        client.close_session(default)


def test_stream_keeps_credits_ahead_and_stops_early(served):
    server, dataset = served
    with augmentd.Client(server.addresses[1]) as client:
        session = client.open_session(augmentd.dataset_session_config(str(dataset), batch_size=1, prefetch_depth=4))
        stream = client.stream_batches(session, credits=3)
        first = next(stream)
        assert first.batch_index == 0
        wait_until(lambda: stream.buffered >= 3, timeout=20)  # the receiver fills the local queue ahead of use
        assert stream.buffered == 3
        # A batch is counted when the server's write completes, which may come after the client has it: poll.
        wait_until(lambda: client.stats(session).sessions[0].batches_produced >= 4, timeout=20)
        stats = client.stats(session).sessions[0]
        assert stats.batches_produced == 4 and stats.credits == 0
        assert [next(stream).batch_index for _ in range(3)] == [1, 2, 3]
        stream.close()
        client.close_session(session)


def test_patch_mode_augment(served):
    server, _ = served
    with augmentd.Client(server.addresses[0]) as client:
        session = client.open_session(augmentd.patch_session_config(
            [8, 8, 8], batch_size=2, seed=3, deep_supervision_scales=[[1, 1, 1], [0.5, 0.5, 0.5]],
            image_dtype=tensor_pb2.DTYPE_FLOAT16, label_dtype=tensor_pb2.DTYPE_INT8))
        shape = (2, 1, *session.initial_patch_size)
        rng = np.random.RandomState(1)
        image = rng.randn(*shape).astype(np.float32)
        seg = rng.randint(0, 3, size=shape).astype(np.int16)
        a = client.augment(session, image, seg, batch_index=4)
        b = client.augment(session, image, seg, batch_index=4)
        assert a.image.shape == (2, 1, 8, 8, 8) and a.image.dtype == np.float16
        assert [t.shape for t in a.targets] == [(2, 1, 8, 8, 8), (2, 1, 4, 4, 4)]
        assert a.targets[0].dtype == np.int8
        assert a.sample_indices == [8, 9]
        assert np.array_equal(a.image, b.image)
        timings = client.stats(session).sessions[0]
        assert timings.compute_latency.count == 2 and timings.load_latency.count == 0  # patch mode: nothing read
        with pytest.raises(augmentd.AugmentdError) as err:
            client.augment(session, image[:, :, :4], seg, batch_index=0)
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and "image" in err.value.details
        client.close_session(session)


def test_bad_session_requests_raise_clear_errors(served):
    server, dataset = served
    with augmentd.Client(server.addresses[1]) as client:
        with pytest.raises(augmentd.AugmentdError) as err:
            client.open_session(augmentd.dataset_session_config(str(dataset), batch_size=9))
        assert err.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED and "max_batch_size" in str(err.value)
        with pytest.raises(augmentd.AugmentdError) as err:
            client.open_session(augmentd.dataset_session_config("/etc"))
        assert err.value.code == grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(augmentd.AugmentdError) as err:
            list(client.stream_batches("s1-nope", max_batches=1))
        assert err.value.code == grpc.StatusCode.NOT_FOUND
        assert client.health() == augmentd.HealthStatus.SERVING


def test_sessions_follow_the_requested_bgv2_release(served):
    """PipelineSpec.bgv2_version picks the SpatialTransform semantics of the preset (issue 23): the resolved
    pipeline names it, an unknown release is INVALID_ARGUMENT naming the field, unset means 0.3.6."""
    server, dataset = served
    folder = str(dataset / "nnUNetPlans_3d_fullres")
    with augmentd.Client(server.addresses[0]) as client:
        for release in ("0.3.5", "0.3.6", ""):
            config = augmentd.dataset_session_config(folder, batch_size=2, seed=3)
            config.pipeline.bgv2_version = release
            session = client.open_session(config)
            assert session.response.resolved_pipeline.bgv2_version == (release or "0.3.6")
            with client.stream_batches(session, credits=1, max_batches=1) as stream:
                (batch,) = list(stream)
            assert batch.image.shape == (2, 1, 8, 8, 8)
            client.close_session(session)
        config = augmentd.dataset_session_config(folder, batch_size=2, seed=3)
        config.pipeline.bgv2_version = "0.2.0"
        with pytest.raises(augmentd.AugmentdError) as err:
            client.open_session(config)
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and "bgv2_version" in err.value.details
        assert list(client.server_info().bgv2_versions) == ["0.3.5", "0.3.6"]
