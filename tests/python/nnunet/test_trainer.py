"""nnUNetTrainerAugmentd with the real nnunetv2 against a real augmentd process (CPU).

* training: 2 epochs × 3 iterations (+ 2 validation iterations) of the real nnU-Net training loop; every batch
  has the structure nnU-Net's loaders deliver, the loss is finite, sessions and the local server are closed;
* statistics: augmentd's train / val batches against nnU-Net's own loaders (nnUNetTrainer.get_dataloaders) on
  the same data — foreground presence per batch position (oversampling), foreground voxel fraction, image
  mean / std, label values, shapes and dtypes;
* settings augmentd cannot express fail loudly;
* ``AUGMENTD_DELIVERY=auto`` picks host shared memory for a local CPU server and falls back in order.
"""
from __future__ import annotations

import math

import grpc
import numpy as np
import pytest
import torch

from nnunet_helpers import assert_stats_match, batch_stats, loader_stats, make_trainer, take

nnunetv2 = pytest.importorskip("nnunetv2")
from nnunetv2.training.nnUNetTrainer.nnUNetTrainer import nnUNetTrainer  # noqa: E402

from augmentd.nnunet.config import DELIVERIES, UnsupportedTrainerSetting  # noqa: E402
from augmentd.nnunet.trainer import nnUNetTrainerAugmentd  # noqa: E402
from augmentd.sessions import AugmentdError  # noqa: E402
from augmentd.v1 import pipeline_pb2, server_info_pb2, session_pb2  # noqa: E402


def _detached(batch: dict) -> dict:
    """A copy of a batch: slot deliveries (host shm, CUDA IPC) are views valid until the next batch."""
    target = batch["target"]
    return {"data": batch["data"].clone(), "keys": list(batch["keys"]),
            "target": [t.clone() for t in target] if isinstance(target, list) else target.clone()}


class RecordingTrainer(nnUNetTrainerAugmentd):
    """Short run that records what the training loop receives."""

    def __init__(self, plans, configuration, fold, dataset_json, device=torch.device("cpu")):
        super().__init__(plans, configuration, fold, dataset_json, device)
        self.num_epochs, self.num_iterations_per_epoch, self.num_val_iterations_per_epoch = 2, 3, 2
        self.seen_train, self.seen_val, self.losses = [], [], []

    def train_step(self, batch):
        self.seen_train.append(_detached(batch))
        out = super().train_step(batch)
        self.losses.append(float(out["loss"]))
        return out

    def validation_step(self, batch):
        self.seen_val.append(_detached(batch))
        return super().validation_step(batch)


def _expected_shapes(trainer):
    b = trainer.configuration_manager.batch_size
    patch = list(trainer.configuration_manager.patch_size)
    scales = trainer._get_deep_supervision_scales()
    return (b, trainer.num_input_channels, *patch), [(b, 1, *[round(p * f) for p, f in zip(patch, s)]) for s in scales]


def test_training_batches_loss_and_cleanup(nnunet_env, augmentd_bin, monkeypatch):
    monkeypatch.delenv("AUGMENTD_ADDRESS", raising=False)
    trainer = make_trainer(RecordingTrainer, nnunet_env["preprocessed"])
    trainer.run_training()

    data_shape, target_shapes = _expected_shapes(trainer)
    assert len(target_shapes) == 3  # 4 stages: full, 1/2, 1/4 (the coarsest is dropped, as in nnU-Net)
    assert len(trainer.seen_train) == 6 and len(trainer.seen_val) == 4
    for batch in trainer.seen_train + trainer.seen_val:
        assert set(batch) == {"data", "target", "keys"}
        assert isinstance(batch["data"], torch.Tensor) and batch["data"].dtype == torch.float32
        assert tuple(batch["data"].shape) == data_shape
        assert torch.isfinite(batch["data"]).all()
        assert isinstance(batch["target"], list)
        assert [tuple(t.shape) for t in batch["target"]] == target_shapes
        assert all(t.dtype == torch.int16 for t in batch["target"])
        assert len(batch["keys"]) == data_shape[0]
    train_ids, val_ids = trainer.do_split()
    assert {k for b in trainer.seen_train for k in b["keys"]} <= set(train_ids)
    assert {k for b in trainer.seen_val for k in b["keys"]} <= set(val_ids)
    assert all(math.isfinite(v) for v in trainer.losses), trainer.losses
    # on_train_end closed the sessions and stopped the local server the trainer had started
    assert trainer._augmentd_loaders == [] and trainer._augmentd_server is None
    log = open(trainer.log_file).read()
    assert "augmentd: closed" in log and "local server stopped (exit status 0)" in log
    # AUGMENTD_DELIVERY=auto with a local server on the CPU: zero-copy host shared memory for both loaders
    assert log.count("delivery DELIVERY_KIND_HOST_SHM") == 2, log
    assert (trainer.output_folder and (nnunet_env["results"]).exists())


def test_batches_match_nnunet_loader_statistics(nnunet_env, augmentd_bin, monkeypatch):
    monkeypatch.delenv("AUGMENTD_ADDRESS", raising=False)
    monkeypatch.setenv("AUGMENTD_SEED", "1234")
    monkeypatch.setenv("nnUNet_n_proc_DA", "0")  # nnU-Net's own loader in this process (2-core CI machines)
    n_train, n_val = 48, 32
    ours = loader_stats(nnUNetTrainerAugmentd, nnunet_env["preprocessed"], n_train, n_val)
    ref = loader_stats(nnUNetTrainer, nnunet_env["preprocessed"], n_train, n_val)
    assert_stats_match(ours, ref, n_train, n_val)


def test_region_targets_match_nnunet_loader(nnunet_env, augmentd_bin, monkeypatch):
    """Regions + ignore label (Dataset988): one bool channel per region plus the ignore label, at every DS scale."""
    monkeypatch.delenv("AUGMENTD_ADDRESS", raising=False)
    monkeypatch.setenv("nnUNet_n_proc_DA", "0")
    means = {}
    for cls in (nnUNetTrainerAugmentd, nnUNetTrainer):
        np.random.seed(0)
        torch.manual_seed(0)
        trainer = make_trainer(cls, nnunet_env["regions"])
        trainer.initialize()
        train, val = trainer.get_dataloaders()
        try:
            batches = take(train, 12)
        finally:
            if cls is nnUNetTrainerAugmentd:
                trainer._augmentd_close()
        stats = batch_stats(batches)
        means[cls] = torch.stack([b["target"][0] for b in batches]).float().mean(dim=(0, 1, 3, 4, 5)).numpy()
        assert stats["target_dtypes"] == [torch.bool] * 3
        assert [s[1] for s in stats["target_shapes"]] == [3, 3, 3]  # regions (1,2), (2) + ignore label 3
    ours, ref = means[nnUNetTrainerAugmentd], means[nnUNetTrainer]
    assert np.all(ours > 0) and np.all(ref > 0), (ours, ref)
    assert np.all((ours / ref > 0.5) & (ours / ref < 2.0)), (ours, ref)


class CustomTransformsTrainer(nnUNetTrainerAugmentd):
    """A pipeline with a bgv2 transform augmentd has no entry for: refused, naming the class and where it sits."""

    @staticmethod
    def get_training_transforms(*args, **kwargs):
        from batchgeneratorsv2.transforms.intensity.inversion import InvertImageTransform
        from batchgeneratorsv2.transforms.utils.compose import ComposeTransforms
        from batchgeneratorsv2.transforms.utils.random import RandomTransform

        ours = nnUNetTrainer.get_training_transforms(*args, **kwargs)
        return ComposeTransforms(ours.transforms + [RandomTransform(InvertImageTransform(0.5), 0.1)])


class CallableRotationTrainer(nnUNetTrainerAugmentd):
    def configure_rotation_dummyDA_mirroring_and_inital_patch_size(self):
        rotation, dummy, initial, mirror = super().configure_rotation_dummyDA_mirroring_and_inital_patch_size()
        return (lambda: 0.1), dummy, initial, mirror


@pytest.mark.parametrize("cls, message", [(CustomTransformsTrainer, r"CustomTransformsTrainer.get_training_transforms: "
                                                                  r"\[\d+\] RandomTransform\(p=0.1\) > "
                                                                  r"InvertImageTransform .*no augmentd transform"),
                                          (CallableRotationTrainer, "rotation_for_DA")])
def test_inexpressible_settings_fail_loudly(nnunet_env, cls, message):
    trainer = make_trainer(cls, nnunet_env["preprocessed"])
    trainer.initialize()
    with pytest.raises(UnsupportedTrainerSetting, match=message):
        trainer.get_dataloaders()
    assert trainer._augmentd_server is None  # nothing was started


class EngineRefusedTrainer(nnUNetTrainerAugmentd):
    """A parameter bgv2 would take but augmentd's engine refuses (p_per_channel > 1): the server's error names it
    and the trainer adds the bgv2 object it was translated from."""

    @staticmethod
    def get_training_transforms(*args, **kwargs):
        from batchgeneratorsv2.transforms.intensity.gaussian_noise import GaussianNoiseTransform
        from batchgeneratorsv2.transforms.utils.compose import ComposeTransforms
        from batchgeneratorsv2.transforms.utils.random import RandomTransform

        ours = nnUNetTrainer.get_training_transforms(*args, **kwargs)
        bad = RandomTransform(GaussianNoiseTransform((0, 0.1), p_per_channel=3.0), apply_probability=0.1)
        return ComposeTransforms([ours.transforms[0], bad] + ours.transforms[1:])


def test_engine_refusal_names_the_bgv2_source(nnunet_env, augmentd_bin, monkeypatch):
    monkeypatch.delenv("AUGMENTD_ADDRESS", raising=False)
    trainer = make_trainer(EngineRefusedTrainer, nnunet_env["preprocessed"])
    trainer.initialize()
    with pytest.raises(AugmentdError, match=r"INVALID_ARGUMENT: .*pipeline\.transforms\[1\].*p_per_channel.*"
                                            r"\(= \[1\] RandomTransform\(p=0\.1\) > GaussianNoiseTransform of "
                                            r"EngineRefusedTrainer\.get_training_transforms\)"):
        trainer.get_dataloaders()
    assert trainer._augmentd_server is None  # the local server was stopped again


class OwnCropTrainer(nnUNetTrainerAugmentd):
    """A configure_rotation_dummyDA_mirroring_and_inital_patch_size with its own crop: the translated list goes
    explicitly with that crop; one no nnU-Net rule produces (beyond 4x the patch) is refused by the server."""
    crop = None

    def configure_rotation_dummyDA_mirroring_and_inital_patch_size(self):
        rotation, dummy, initial, mirror = super().configure_rotation_dummyDA_mirroring_and_inital_patch_size()
        return rotation, dummy, list(self.crop), mirror


@pytest.mark.parametrize("crop, ok", [((60, 52, 52), True), ((400, 52, 52), False)])
def test_own_crop_goes_explicitly_and_is_bounded(nnunet_env, augmentd_bin, monkeypatch, crop, ok):
    monkeypatch.delenv("AUGMENTD_ADDRESS", raising=False)
    monkeypatch.setattr(OwnCropTrainer, "crop", crop)
    trainer = make_trainer(OwnCropTrainer, nnunet_env["preprocessed"])  # patch 48×40×40
    trainer.initialize()
    if not ok:
        with pytest.raises(AugmentdError, match=r"initial_patch_size: entries must be in \[1, 4 x max\(patch_size\) "
                                                r"= 192\], got 400"):
            trainer.get_dataloaders()
        return
    train, val = trainer.get_dataloaders()
    try:
        assert train.session.config.pipeline.preset == pipeline_pb2.PRESET_UNSPECIFIED
        assert list(train.session.config.pipeline.trainer.initial_patch_size) == list(crop)
        assert train.session.initial_patch_size == list(crop)  # the server crops what the trainer asked for
        assert tuple(take(train, 1)[0]["data"].shape[2:]) == (48, 40, 40)
    finally:
        trainer._augmentd_close()


def test_unreachable_server_without_local_fallback_fails(nnunet_env, monkeypatch, tmp_path):
    monkeypatch.setenv("AUGMENTD_ADDRESS", f"unix://{tmp_path}/nobody.sock")
    monkeypatch.setenv("AUGMENTD_LOCAL_SERVER", "never")
    monkeypatch.setenv("AUGMENTD_CONNECT_TIMEOUT", "0.5")
    trainer = make_trainer(nnUNetTrainerAugmentd, nnunet_env["preprocessed"])
    trainer.initialize()
    with pytest.raises(ConnectionError, match="nobody.sock within 0.5 s"):
        trainer.get_dataloaders()


class _RefusingClient:
    """open_session refuses the deliveries in ``refuse`` the way a server (or slot mapping) does."""

    def __init__(self, refuse: dict):
        self.refuse, self.tried = refuse, []

    def open_session(self, config, start_batch_index=0):
        name = server_info_pb2.DeliveryKind.Name(config.delivery)
        self.tried.append(name)
        if name in self.refuse:
            raise self.refuse[name]
        return ("session", name)


def _bare_trainer(client):
    trainer = nnUNetTrainerAugmentd.__new__(nnUNetTrainerAugmentd)  # only _open_session's state
    trainer._augmentd_client, trainer.logged = client, []
    trainer.print_to_log_file = lambda *a, **k: trainer.logged.append(" ".join(map(str, a)))
    return trainer


def _config(delivery, prefetch=0):
    return session_pb2.SessionConfig(name="t", delivery=DELIVERIES[delivery], prefetch_depth=prefetch)


class _DepthLimitedClient(_RefusingClient):
    """Refuses prefetch depths above ``max_depth`` as the server does for large batches (0 = the server's 2)."""

    def __init__(self, max_depth: int):
        super().__init__({})
        self.max_depth, self.depths = max_depth, []

    def open_session(self, config, start_batch_index=0):
        self.depths.append(config.prefetch_depth)
        if (config.prefetch_depth or 2) > self.max_depth:
            raise AugmentdError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                f"config.prefetch_depth: {config.prefetch_depth} batches of ~600000000 bytes exceed "
                                f"the server's max_inflight_bytes_per_session 1073741824")
        return super().open_session(config, start_batch_index)


def test_default_prefetch_depth_falls_back_to_the_servers_for_large_batches():
    client = _DepthLimitedClient(max_depth=2)
    trainer = _bare_trainer(client)
    config, session = trainer._open_session(_config, ["cuda_ipc", "inline"], 0, "/data")
    assert session == ("session", "DELIVERY_KIND_CUDA_IPC") and client.depths == [4, 0]
    assert config.prefetch_depth == 0 and "using the server's default prefetch depth" in trainer.logged[0]
    # A depth the user asked for is not changed: the error surfaces (after the delivery fallbacks).
    client = _DepthLimitedClient(max_depth=2)
    with pytest.raises(AugmentdError, match="config.prefetch_depth"):
        _bare_trainer(client)._open_session(_config, ["cuda_ipc", "inline"], 0, "/data", prefetch=6)
    assert client.depths == [6, 6]
    # Small batches keep the 4 slots.
    client = _DepthLimitedClient(max_depth=8)
    config, _ = _bare_trainer(client)._open_session(_config, ["inline"], 0, "/data")
    assert config.prefetch_depth == 4 and client.depths == [4]


def test_auto_delivery_falls_back_in_order_and_logs_why():
    client = _RefusingClient({
        "DELIVERY_KIND_CUDA_IPC": AugmentdError(grpc.StatusCode.INVALID_ARGUMENT, "config.delivery: no GPU"),
        "DELIVERY_KIND_HOST_SHM": OSError("shm_open: No such file or directory")})
    trainer = _bare_trainer(client)
    config, session = trainer._open_session(_config, ["cuda_ipc", "host_shm", "inline"], 0, "/data")
    assert session == ("session", "DELIVERY_KIND_INLINE")
    assert client.tried == ["DELIVERY_KIND_CUDA_IPC", "DELIVERY_KIND_HOST_SHM", "DELIVERY_KIND_INLINE"]
    assert "delivery cuda_ipc not available" in trainer.logged[0] and "no GPU" in trainer.logged[0]
    assert "delivery host_shm not available" in trainer.logged[1] and "shm_open" in trainer.logged[1]


def test_auto_delivery_does_not_hide_other_errors():
    unavailable = AugmentdError(grpc.StatusCode.UNAVAILABLE, "server gone")
    client = _RefusingClient({"DELIVERY_KIND_CUDA_IPC": unavailable})
    with pytest.raises(AugmentdError, match="server gone"):
        _bare_trainer(client)._open_session(_config, ["cuda_ipc", "host_shm", "inline"], 0, "/data")
    assert client.tried == ["DELIVERY_KIND_CUDA_IPC"]
    last = AugmentdError(grpc.StatusCode.INVALID_ARGUMENT, "config.batch_size: 0")
    client = _RefusingClient({"DELIVERY_KIND_INLINE": last})
    with pytest.raises(AugmentdError, match="config.batch_size"):
        _bare_trainer(client)._open_session(_config, ["inline"], 0, "/data")


def test_da5_trainer_serves_da5_batches(nnunet_env, augmentd_bin, monkeypatch):
    from augmentd.nnunet.trainer import nnUNetTrainerAugmentdDA5
    monkeypatch.delenv("AUGMENTD_ADDRESS", raising=False)
    trainer = make_trainer(nnUNetTrainerAugmentdDA5, nnunet_env["preprocessed"], patch_size=(16, 16, 16))
    trainer.initialize()
    train, val = trainer.get_dataloaders()
    try:
        batches = take(train, 3)
        assert train.session.config.pipeline.preset == pipeline_pb2.PRESET_NNUNET_DA5
        assert val.session.config.pipeline.preset == pipeline_pb2.PRESET_NNUNET_VALIDATION
        data_shape, target_shapes = _expected_shapes(trainer)
        for b in batches:
            assert tuple(b["data"].shape) == data_shape and torch.isfinite(b["data"]).all()
            assert [tuple(t.shape) for t in b["target"]] == target_shapes
        # fresh random crops and augmentation per batch
        assert not torch.equal(batches[0]["data"], batches[1]["data"])
    finally:
        trainer._augmentd_close()


def test_ddp_rank_opens_its_own_session_pair(nnunet_env, monkeypatch):
    """Per DDP rank (nnU-Net: local_rank = the global rank, batch size and oversampling split per rank): one train and
    one val session, seeds base + 2·rank and base + 2·rank + 1, the rank's batch size, the rank's device."""
    import augmentd.nnunet.trainer as mod

    opened = []

    class FakeLoader:
        def __init__(self, client, session, *args, **kwargs):
            self.session, self.name = session, kwargs.get("name", "")

        def __next__(self):
            return {}

        def close(self):
            return None

    class FakeSession:
        def __init__(self, config):
            self.config, self.session_id, self.device = config, f"s{len(opened)}", "cpu"
            self.initial_patch_size = list(config.pipeline.trainer.initial_patch_size) or \
                list(config.pipeline.trainer.patch_size)  # val: the preset's patch_size crops
            self.response = session_pb2.OpenSessionResponse(delivery=server_info_pb2.DELIVERY_KIND_INLINE)

    class FakeClient:
        def open_session(self, config, start_batch_index=0):
            opened.append(config)
            return FakeSession(config)

        def close(self):
            pass

    monkeypatch.setattr(mod, "connect_or_start", lambda *a, **k: (FakeClient(), None))
    monkeypatch.setattr(mod, "AugmentdLoader", FakeLoader)
    monkeypatch.setenv("AUGMENTD_SEED", "100")
    monkeypatch.setenv("AUGMENTD_DELIVERY", "inline")
    monkeypatch.delenv("AUGMENTD_DEVICE", raising=False)
    from nnunetv2.training.nnUNetTrainer.variants.data_augmentation.nnUNetTrainerDAOrd0 import \
        nnUNetTrainer_DASegOrd0

    from augmentd.nnunet.dynamic import augmentd_trainer

    trainer = make_trainer(augmentd_trainer(nnUNetTrainer_DASegOrd0), nnunet_env["preprocessed"])
    trainer.initialize()
    trainer.local_rank, trainer.batch_size = 1, 1  # what nnU-Net's DDP set-up gives rank 1 of 2 (batch 2 split)
    train, val = trainer.get_dataloaders()
    assert [c.name.rsplit(" ", 1)[-1] for c in opened] == ["train", "val"]
    assert [c.seed for c in opened] == [102, 103]
    assert [c.batch_size for c in opened] == [1, 1] and all(c.device == "cpu" for c in opened)
    assert opened[0].pipeline.transforms and opened[1].pipeline.preset == pipeline_pb2.PRESET_NNUNET_VALIDATION
    assert train.session.config is opened[0] and val.session.config is opened[1]
