"""nnUNetTrainerAugmentdPatch (issue 22) with the real nnunetv2 against a real augmentd process (CPU): nnU-Net's own
loader (crop and pad, in threads) feeding augmentd patch mode. A short real training run (batch structure, finite
loss, sessions and the local server closed), and its batches against nnU-Net's own loaders' statistics."""
from __future__ import annotations

import math
import time

import numpy as np
import pytest
import torch

from nnunet_helpers import batch_stats, make_trainer, take

nnunetv2 = pytest.importorskip("nnunetv2")
from nnunetv2.training.nnUNetTrainer.nnUNetTrainer import nnUNetTrainer  # noqa: E402

from augmentd.nnunet.patch_trainer import nnUNetTrainerAugmentdPatch  # noqa: E402


def _detached(batch: dict) -> dict:
    target = batch["target"]
    return {"data": batch["data"].clone(), "keys": list(batch["keys"]),
            "target": [t.clone() for t in target] if isinstance(target, list) else target.clone()}


class RecordingPatchTrainer(nnUNetTrainerAugmentdPatch):
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


@pytest.mark.parametrize("workers,pace", [("processes", "0"), ("threads", "0"), ("threads", "0.5")])
def test_patch_trainer_trains_and_cleans_up(nnunet_env, augmentd_bin, monkeypatch, workers, pace):
    monkeypatch.delenv("AUGMENTD_ADDRESS", raising=False)
    monkeypatch.setenv("AUGMENTD_PATCH_THREADS", "2")
    monkeypatch.setenv("AUGMENTD_PATCH_WORKERS", workers)
    monkeypatch.setenv("AUGMENTD_PATCH_FEED_PACE", pace)
    trainer = make_trainer(RecordingPatchTrainer, nnunet_env["preprocessed"])
    trainer.run_training()
    b = trainer.configuration_manager.batch_size
    patch = list(trainer.configuration_manager.patch_size)
    scales = trainer._get_deep_supervision_scales()
    targets = [(b, 1, *[round(p * f) for p, f in zip(patch, s)]) for s in scales]
    assert len(trainer.seen_train) == 6 and len(trainer.seen_val) == 4
    for batch in trainer.seen_train + trainer.seen_val:
        assert tuple(batch["data"].shape) == (b, trainer.num_input_channels, *patch)
        assert batch["data"].dtype == torch.float32 and torch.isfinite(batch["data"]).all()
        assert [tuple(t.shape) for t in batch["target"]] == targets
        assert all(t.dtype == torch.int16 for t in batch["target"])
        assert len(batch["keys"]) == b
    train_ids, val_ids = trainer.do_split()
    assert {k for x in trainer.seen_train for k in x["keys"]} <= set(train_ids)
    assert {k for x in trainer.seen_val for k in x["keys"]} <= set(val_ids)
    assert all(math.isfinite(v) for v in trainer.losses), trainer.losses
    assert trainer._augmentd_loaders == [] and trainer._augmentd_server is None
    log = open(trainer.log_file).read()
    assert log.count("(patch mode) session") == 2 and "input slots 2" in log, log
    assert f"loader {workers}" in log, log
    assert "augmentd: closed" in log and "local server stopped (exit status 0)" in log


def _stats(trainer_cls, preprocessed, n_train, n_val):
    np.random.seed(0)
    torch.manual_seed(0)
    trainer = make_trainer(trainer_cls, preprocessed, patch_size=(16, 16, 16))
    trainer.initialize()
    train, val = trainer.get_dataloaders()
    try:
        return batch_stats(take(train, n_train)), batch_stats(take(val, n_val))
    finally:
        if isinstance(trainer, nnUNetTrainerAugmentdPatch):
            trainer._augmentd_close()
        else:
            for loader in (train, val):
                getattr(loader, "_finish", lambda: None)()


def test_patch_trainer_batches_match_nnunet_loader_statistics(nnunet_env, augmentd_bin, monkeypatch):
    monkeypatch.delenv("AUGMENTD_ADDRESS", raising=False)
    monkeypatch.setenv("AUGMENTD_SEED", "99")
    monkeypatch.setenv("AUGMENTD_PATCH_THREADS", "2")
    monkeypatch.setenv("nnUNet_n_proc_DA", "0")
    n_train, n_val = 32, 16
    ours_tr, ours_val = _stats(nnUNetTrainerAugmentdPatch, nnunet_env["preprocessed"], n_train, n_val)
    ref_tr, ref_val = _stats(nnUNetTrainer, nnunet_env["preprocessed"], n_train, n_val)
    for ours, ref, what in ((ours_tr, ref_tr, "train"), (ours_val, ref_val, "val")):
        assert ours["data_shape"] == ref["data_shape"], what
        assert ours["target_shapes"] == ref["target_shapes"], what
        assert ours["data_dtype"] == ref["data_dtype"] == torch.float32, what
        assert ours["target_dtypes"] == ref["target_dtypes"], what
        assert ours["labels"] == ref["labels"], (what, ours["labels"], ref["labels"])
        # nnU-Net's own sampler: the last slot of a batch of 2 is forced foreground in both
        assert ref["has_fg"][-1] >= 0.9 and ours["has_fg"][-1] >= 0.9, (what, ours["has_fg"], ref["has_fg"])
        assert abs(ours["mean"] - ref["mean"]) < 0.25, (what, ours["mean"], ref["mean"])
        assert 0.75 < ours["std"] / ref["std"] < 1.33, (what, ours["std"], ref["std"])


class _FakeBatches:
    def __init__(self):
        self.taken = []

    def __next__(self):
        self.taken.append(time.monotonic())
        return "image", "seg", ["case"]

    def recycle(self, pair):
        pass

    def close(self):
        pass


class _FakeFuture:
    pass


class _FakeAugmenter:
    device, depth, session = "cpu", 2, None

    def __init__(self):
        self.submitted = []

    def submit(self, image, seg):
        self.submitted.append(time.monotonic())
        return _FakeFuture()

    def result(self, future):
        return "out", ["t0"]

    def close(self):
        return None


@pytest.mark.parametrize("pace", [0.0, 0.5])
def test_feed_pacing_submits_after_the_paced_part_of_the_period(pace):
    from augmentd.nnunet.patch_trainer import AugmentdPatchLoader

    batches, aug = _FakeBatches(), _FakeAugmenter()
    loader = AugmentdPatchLoader(batches, aug, True, "fake", ahead=1, pace=pace)
    try:
        taken = []
        for _ in range(6):
            batch = next(loader)
            assert batch["data"] == "out" and batch["target"] == ["t0"] and batch["keys"] == ["case"]
            taken.append(time.monotonic())
            time.sleep(0.2)  # the "step"
        deadline = time.monotonic() + 5
        while len(aug.submitted) < 7 and time.monotonic() < deadline:
            time.sleep(0.01)
        # submit k + 1 follows next() k: at once without pacing, >= pace x the period (~0.2 s) after it with
        assert len(aug.submitted) == 7
        gaps = [s - t for t, s in zip(taken[2:], aug.submitted[3:])]
        if pace:
            assert all(g >= 0.5 * 0.2 * 0.9 for g in gaps), gaps  # a lower bound: waits never end early
            assert loader._period >= 0.2
        else:
            assert loader._period is None  # not even measured
    finally:
        loader.close()
    with pytest.raises(ValueError, match="AUGMENTD_PATCH_FEED_PACE"):
        AugmentdPatchLoader(batches, aug, True, "fake", ahead=1, pace=1.5)
