"""nnUNetTrainerAugmentdDAExt (AugLab's nnUNetTrainerDAExtGPU served by augmentd) with the real nnunetv2 against a
real augmentd process (CPU): it configures itself as nnUNetTrainerDAExtGPU (mirroring off for training and
inference, nnU-Net's initial patch size), sends the auglab_daext_gpu pipeline built from $AUGLAB_PARAMS_GPU_JSON as an
explicit list, and a short real training run (2 epochs × 3 iterations, 2 validation iterations) gets batches of
nnU-Net's structure and a finite loss.
"""
from __future__ import annotations

import json
import math

import pytest
import torch

from auglab_params_20260109 import AUGLAB_20260109
from nnunet_helpers import make_trainer, take

nnunetv2 = pytest.importorskip("nnunetv2")

from augmentd.nnunet.trainer import nnUNetTrainerAugmentdDAExt  # noqa: E402
from augmentd.v1 import pipeline_pb2  # noqa: E402


class ShortDAExt(nnUNetTrainerAugmentdDAExt):
    def __init__(self, plans, configuration, fold, dataset_json, device=torch.device("cpu")):
        super().__init__(plans, configuration, fold, dataset_json, device)
        self.num_epochs, self.num_iterations_per_epoch, self.num_val_iterations_per_epoch = 2, 3, 2
        self.losses = []

    def train_step(self, batch):
        out = super().train_step(batch)
        self.losses.append(float(out["loss"]))
        return out


@pytest.fixture
def auglab_json(tmp_path, monkeypatch):
    p = tmp_path / "transform_params_gpu.json"
    p.write_text(json.dumps(AUGLAB_20260109))
    monkeypatch.setenv("AUGLAB_PARAMS_GPU_JSON", str(p))
    monkeypatch.setenv("AUGMENTD_SEED", "5")
    monkeypatch.delenv("AUGMENTD_ADDRESS", raising=False)
    return p


def test_daext_trainer_configures_like_auglab_and_serves_batches(nnunet_env, augmentd_bin, auglab_json):
    trainer = make_trainer(ShortDAExt, nnunet_env["preprocessed"], patch_size=(16, 16, 16))
    trainer.initialize()
    assert trainer.auglab_params_path == str(auglab_json)
    _, _, initial, mirror = trainer.configure_rotation_dummyDA_mirroring_and_inital_patch_size()
    assert mirror is None and trainer.inference_allowed_mirroring_axes is None
    train, val = trainer.get_dataloaders()
    try:
        cfg = train.session.config.pipeline
        assert cfg.preset == pipeline_pb2.PRESET_UNSPECIFIED
        kinds = [pipeline_pb2.TransformKind.Name(t.kind) for t in cfg.transforms]
        assert kinds[:3] == ["SPATIAL", "REMOVE_LABEL", "ZSCORE_NORMALIZATION"]
        for k in ("AUGLAB_LOW_RESOLUTION", "REDISTRIBUTE_SEG", "AUGLAB_BIAS_FIELD", "CLAMP", "EDGE_CONVOLUTION"):
            assert k in kinds
        assert "MIRROR" not in kinds
        assert any(t.same_on_batch for t in cfg.transforms)  # AugLab's same_on_batch=True
        assert not cfg.transforms[0].same_on_batch
        # RandConv / RedistributeSeg share only the decision (AugLab draws their parameters per sample)
        assert [t.same_on_batch_decision_only for t in cfg.transforms
                if t.kind in (pipeline_pb2.RANDOM_CONVOLUTION, pipeline_pb2.REDISTRIBUTE_SEG)] == [True, True]
        assert list(train.session.initial_patch_size)[-3:] == list(initial)
        b = take(train, 2)
        assert tuple(b[0]["data"].shape[2:]) == (16, 16, 16) and torch.isfinite(b[0]["data"]).all()
        assert isinstance(b[0]["target"], list) and tuple(b[0]["target"][0].shape[2:]) == (16, 16, 16)
    finally:
        trainer._augmentd_close()


def test_daext_trainer_short_training_run(nnunet_env, augmentd_bin, auglab_json):
    trainer = make_trainer(ShortDAExt, nnunet_env["preprocessed"], patch_size=(16, 16, 16))
    trainer.run_training()
    assert len(trainer.losses) == 6 and all(math.isfinite(v) for v in trainer.losses)
