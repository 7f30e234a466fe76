"""Shared helpers of the nnU-Net integration tests: small trainers on the synthetic dataset, batch statistics."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import torch

from augmentd.nnunet.timing import shrink_network


def tiny_plans(preprocessed: Path) -> dict:
    """The dataset's plans with a narrow network: training iterations take well under a second on a CPU core while
    the patch size, strides (deep-supervision scales) and batch size stay nnU-Net's own."""
    plans = json.loads((preprocessed / "nnUNetPlans.json").read_text())
    plans["continue_training"] = False
    return shrink_network(plans, "3d_fullres")


def make_trainer(cls, preprocessed: Path, fold=0, patch_size=None):
    """A ``cls`` trainer on the CPU with ``tiny_plans`` (and ``patch_size`` instead of the planned one if given)."""
    dataset_json = json.loads((preprocessed / "dataset.json").read_text())
    plans = copy.deepcopy(tiny_plans(preprocessed))
    if patch_size is not None:
        plans["configurations"]["3d_fullres"]["patch_size"] = list(patch_size)
    return cls(plans, "3d_fullres", fold, dataset_json, torch.device("cpu"))


def batch_stats(batches) -> dict:
    """Per batch position j: fraction of samples with foreground and mean foreground voxel fraction; image
    mean / std; label values; shapes and dtypes of the first batch."""
    first = batches[0]
    b = first["data"].shape[0]
    has_fg = np.zeros(b)
    fg_frac = np.zeros(b)
    labels = set()
    means, stds = [], []
    for batch in batches:
        t0 = batch["target"][0] if isinstance(batch["target"], list) else batch["target"]
        t0 = t0.numpy()
        labels.update(np.unique(t0).tolist())
        for j in range(b):
            fg = t0[j] > 0
            has_fg[j] += fg.any()
            fg_frac[j] += fg.mean()
        data = batch["data"].numpy()
        means.append(float(data.mean()))
        stds.append(float(data.std()))
    n = len(batches)
    targets = first["target"] if isinstance(first["target"], list) else [first["target"]]
    return {"has_fg": has_fg / n, "fg_frac": fg_frac / n, "labels": labels, "mean": float(np.mean(means)),
            "std": float(np.mean(stds)), "data_shape": tuple(first["data"].shape), "data_dtype": first["data"].dtype,
            "target_shapes": [tuple(t.shape) for t in targets], "target_dtypes": [t.dtype for t in targets]}


def take(loader, n: int) -> list:
    """n batches of a loader, as CPU tensors (nnU-Net's own loaders may hand numpy arrays in old versions)."""
    out = []
    for _ in range(n):
        batch = next(loader)
        # copies: slot deliveries (host shm, CUDA IPC) hand views that stay valid only until the next batch
        data = torch.as_tensor(batch["data"]).clone()
        target = batch["target"]
        target = [torch.as_tensor(t).clone() for t in target] if isinstance(target, list) \
            else torch.as_tensor(target).clone()
        out.append({"data": data, "target": target})
    return out


def loader_stats(trainer_cls, preprocessed: Path, n_train: int, n_val: int):
    """batch_stats of ``n_train`` / ``n_val`` batches of a trainer's two loaders (an augmentd trainer's or nnU-Net's
    own), on 16³ patches: much smaller than the images (the planned one covers nearly all of them), so that random
    crops often miss the foreground and the oversampling rule shows in the statistics."""
    np.random.seed(0)  # nnU-Net's loader and bgv2 draw from numpy / torch global state: make the run repeatable
    torch.manual_seed(0)
    trainer = make_trainer(trainer_cls, preprocessed, patch_size=(16, 16, 16))
    trainer.initialize()
    train, val = trainer.get_dataloaders()
    try:
        return batch_stats(take(train, n_train)), batch_stats(take(val, n_val))
    finally:
        if hasattr(trainer, "_augmentd_close"):
            trainer._augmentd_close()
        else:
            for loader in (train, val):
                getattr(loader, "_finish", lambda: None)()


def assert_stats_match(ours, ref, n_train: int, n_val: int) -> None:
    """augmentd's (train, val) batch statistics against nnU-Net's own loaders' (see the tolerances inline)."""
    for o, r, what in ((ours[0], ref[0], "train"), (ours[1], ref[1], "val")):
        assert o["data_shape"] == r["data_shape"], what
        assert o["target_shapes"] == r["target_shapes"], what
        assert o["data_dtype"] == r["data_dtype"] == torch.float32, what
        assert o["target_dtypes"] == r["target_dtypes"], what
        assert o["labels"] == r["labels"], (what, o["labels"], r["labels"])
        # oversampling: with batch 2 and 0.33 the last slot is forced to contain foreground, the first is random
        assert r["has_fg"][-1] >= 0.9 and o["has_fg"][-1] >= 0.9, (what, o["has_fg"], r["has_fg"])
        assert r["has_fg"][0] < 0.9 and o["has_fg"][0] < 0.9, (what, o["has_fg"], r["has_fg"])
        n = n_train if what == "train" else n_val
        p = (o["has_fg"] + r["has_fg"]) / 2  # 4 standard deviations of a difference of two binomials
        tolerance = 4 * np.sqrt(2 * p * (1 - p) / n) + 0.05
        assert np.all(np.abs(o["has_fg"] - r["has_fg"]) <= tolerance), (what, o["has_fg"], r["has_fg"])
        ratio = o["fg_frac"] / np.maximum(r["fg_frac"], 1e-6)
        assert np.all((ratio > 0.5) & (ratio < 2.0)), (what, o["fg_frac"], r["fg_frac"])
        assert abs(o["mean"] - r["mean"]) < 0.25, (what, o["mean"], r["mean"])
        assert 0.75 < o["std"] / r["std"] < 1.33, (what, o["std"], r["std"])
