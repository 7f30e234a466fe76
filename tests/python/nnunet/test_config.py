"""The mapping of an nnU-Net trainer's loader settings to augmentd SessionConfig messages (no server needed)."""
from __future__ import annotations

import pytest

from augmentd.nnunet.config import LoaderSettings, UnsupportedTrainerSetting, \
    delivery_candidates, is_local_address, local_server_args, \
    training_config, validation_config
from augmentd.v1 import pipeline_pb2, server_info_pb2


def _settings(**overrides) -> LoaderSettings:
    base = dict(dataset_folder="/data/pre/Dataset001_X/nnUNetPlans_3d_fullres", patch_size=[64, 96, 80],
                initial_patch_size=[111, 150, 130], rotation=(-0.5, 0.5), do_dummy_2d_data_aug=False,
                mirror_axes=[0, 1, 2], deep_supervision_scales=[[1, 1, 1], [0.5, 0.5, 0.5]], batch_size=3,
                oversample_foreground_percent=0.5, probabilistic_oversampling=True, num_input_channels=2,
                use_mask_for_norm=[True, False], regions=[[1, 2], [2]], ignore_label=3, train_ids=["a", "b"],
                val_ids=["c"])
    base.update(overrides)
    return LoaderSettings(**base)


def test_training_config_carries_every_setting():
    c = training_config(_settings(), seed=7, delivery="cuda_ipc", device="cuda:1", name="t", prefetch_depth=3)
    t = c.pipeline.trainer
    assert c.pipeline.preset == pipeline_pb2.PRESET_NNUNET_DEFAULT
    assert list(t.patch_size) == [64, 96, 80] and t.num_input_channels == 2
    assert (t.rotation.min, t.rotation.max) == (-0.5, 0.5)
    assert list(t.mirror_axes.axes) == [0, 1, 2] and t.HasField("do_dummy_2d_data_aug")
    assert [list(s.factors) for s in t.deep_supervision_scales] == [[1, 1, 1], [0.5, 0.5, 0.5]]
    assert [list(r.labels) for r in t.regions] == [[1, 2], [2]] and t.ignore_label == 3
    assert list(t.use_mask_for_norm) == [True, False]
    assert not t.initial_patch_size  # the server derives it; the trainer checks the response instead
    d = c.dataset
    assert d.dataset_path.endswith("nnUNetPlans_3d_fullres") and list(d.case_ids) == ["a", "b"]
    assert d.oversample_foreground_percent == 0.5 and d.probabilistic_oversampling
    assert (c.batch_size, c.seed, c.device, c.prefetch_depth) == (3, 7, "cuda:1", 3)
    assert c.delivery == server_info_pb2.DELIVERY_KIND_CUDA_IPC


def test_no_mirroring_and_no_deep_supervision_are_explicit():
    t = training_config(_settings(mirror_axes=None, deep_supervision_scales=None, regions=None, ignore_label=None),
                        seed=0).pipeline.trainer
    assert t.HasField("mirror_axes") and list(t.mirror_axes.axes) == []  # set and empty: no mirroring
    assert len(t.deep_supervision_scales) == 0 and not t.regions and not t.HasField("ignore_label")


def test_validation_config_is_unaugmented_on_the_val_cases():
    c = validation_config(_settings(), seed=1)
    assert c.pipeline.preset == pipeline_pb2.PRESET_NNUNET_VALIDATION
    assert list(c.dataset.case_ids) == ["c"]
    assert not c.pipeline.trainer.HasField("rotation") and not c.pipeline.trainer.HasField("mirror_axes")
    assert c.delivery == server_info_pb2.DELIVERY_KIND_UNSPECIFIED  # auto: the server picks


def test_bad_delivery_and_empty_split_are_rejected():
    with pytest.raises(ValueError, match="delivery must be one of"):
        training_config(_settings(), seed=0, delivery="carrier_pigeon")
    with pytest.raises(UnsupportedTrainerSetting, match="no cases"):
        validation_config(_settings(val_ids=[]), seed=0)


@pytest.mark.parametrize("address, local", [
    ("unix:///tmp/augmentd.sock", True), ("localhost:50051", True), ("127.0.0.1:7", True), ("[::1]:7", True),
    ("gpu-node-3:50051", False), ("10.0.0.5:50051", False), (None, False), ("", False)])
def test_is_local_address(address, local):
    assert is_local_address(address) is local


@pytest.mark.parametrize("requested, device, local, expected", [
    ("auto", "cuda:0", True, ["cuda_ipc", "host_shm", "inline"]),
    ("auto", "GPU-1234", True, ["cuda_ipc", "host_shm", "inline"]),
    ("auto", "cpu", True, ["host_shm", "inline"]),
    ("auto", "cuda:1", False, ["inline"]),
    ("host_shm", "cuda:0", False, ["host_shm"]),  # explicit: tried alone, even where it cannot work
    ("inline", "cuda:0", True, ["inline"])])
def test_delivery_candidates(requested, device, local, expected):
    assert delivery_candidates(requested, device, local) == expected


def test_delivery_candidates_rejects_unknown():
    with pytest.raises(ValueError, match="AUGMENTD_DELIVERY must be one of"):
        delivery_candidates("pigeon", "cpu", True)


GIB = 1 << 30


@pytest.mark.parametrize("device,caches,gpu,host,ranks,expected", [
    # H200 (141 GB) and a 2 TB host: both budgets at the 16 GiB cap.
    ("cuda:0", "auto", 141 * 10**9, 2000 * 10**9, 1, [16 * GIB, 16 * GIB]),
    # 24 GB GPU, 64 GB host, 4 ranks on the node: 15 % of the GPU, 10 % of RAM split four ways.
    ("GPU-8f1c2d3e-0000-1111-2222-333344445555", "auto", 24 * 10**9, 64 * 10**9, 4,
     [3_600_000_000, 1_600_000_000]),
    # Unknown sizes: no cache flags, the workers still.
    ("cuda:1", "auto", 0, 0, 1, [0, 0]),
    ("cpu", "auto", 141 * 10**9, 10**12, 1, None),
    ("cuda:1", "0", 141 * 10**9, 10**12, 1, None)])
def test_local_server_args(device, caches, gpu, host, ranks, expected):
    args = local_server_args(device, caches, gpu, host, ranks)
    if expected is None:
        assert args == []
        return
    want = ([f"--dataset_gpu_cache={expected[0]}"] if expected[0] else []) + \
        ([f"--dataset_host_cache={expected[1]}"] if expected[1] else []) + \
        ["--dataset_prefetch_threads=8", "--gpu_workers=4"]
    assert args == want


@pytest.mark.parametrize("device", ["cpu", "cuda:0"])
def test_local_server_args_raise_max_batch_size_for_large_batches(device):
    """nnU-Net's 2d plans reach batch sizes above the server's default limit of 64 (88 for a 160² dataset on the
    H200): the trainer-started server must accept the trainer's batch, on the CPU too; at or below 64 no flag."""
    assert "--max_batch_size=88" in local_server_args(device, "auto", 141 * 10**9, 10**12, 1, batch_size=88)
    assert not [a for a in local_server_args(device, "auto", 141 * 10**9, 10**12, 1, batch_size=64)
                if a.startswith("--max_batch_size")]


def test_local_server_args_are_accepted_by_the_server(tmp_path):
    """The flags parse (a typo would make every trainer-started GPU server fail to start); checked with --help,
    which parses every flag first."""
    import subprocess

    from augmentd.local_server import find_binary
    try:
        binary = find_binary(None)
    except FileNotFoundError:
        pytest.skip("no augmentd binary")
    args = local_server_args("cuda:0", "auto", 141 * 10**9, 10**12, 1, batch_size=88)
    out = subprocess.run([binary, *args, "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    bad = subprocess.run([binary, "--dataset_gpu_cach=1", "--help"], capture_output=True, text=True, timeout=30)
    assert bad.returncode != 0  # the check above can fail
