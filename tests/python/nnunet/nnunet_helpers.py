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
