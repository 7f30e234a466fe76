"""Parity of augmentd's ``zscore_normalization`` with AugLab's own ``ZscoreNormalizationGPU`` (the installed
``auglab`` package, GPL-3.0: a test dependency only, run on the CPU here). AugLab needs kornia < 0.9
(``kornia.core.Tensor``); scripts/setup.sh installs ``auglab==20260109 kornia==0.8.1 kornia-rs==0.2.0`` with
``--no-deps`` into ``.venv/auglab`` (or set ``$AUGMENTD_AUGLAB_DIR``). Tolerance: 1e-5 of each channel's range
(torch reduces the statistics in float32, augmentd in double). AugLab's GPU transforms take (N, C, X, Y, Z)
batches (a 4D tensor is read as one unbatched 3D sample), so 2D data is compared as X = 1.
"""
from __future__ import annotations

import numpy as np
import pytest

from augment_capi import require_auglab

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def auglab_zscore():
    require_auglab()
    from auglab.transforms.gpu.contrast import ZscoreNormalizationGPU
    return ZscoreNormalizationGPU


def _ours(capi, config, image):
    _, t = capi.run({"op": "apply_transform", "transform": {"kind": "zscore_normalization", "config": config},
                     "params": {}}, image=image)
    return t["image"]


@pytest.mark.parametrize("shape,channels,apply", [((9, 11, 13), 1, [0]), ((6, 20, 17), 3, [0, 2]),
                                                  ((5, 8, 7), 2, [1, 5]), ((1, 16, 16), 2, [0, 1])])
def test_zscore_matches_auglab(capi, auglab_zscore, shape, channels, apply):
    rng = np.random.default_rng(23 + channels)
    batch = (rng.standard_normal((3, channels, *shape)) ** 3 * rng.uniform(0.5, 40) + rng.uniform(-100, 100))
    batch = batch.astype(np.float32)
    ref = auglab_zscore(apply_to_channel=apply, p=1.0)(torch.from_numpy(batch.copy())).numpy()
    for b in range(batch.shape[0]):
        ours = _ours(capi, {"apply_to_channel": apply}, batch[b])
        for c in range(channels):
            r = ref[b, c]
            tol = 1e-5 * max(float(r.max() - r.min()), 1e-6)
            err = float(np.abs(ours[c].astype(np.float64) - r).max())
            assert err <= tol, f"sample {b} channel {c}: max |err| {err:.3g} > {tol:.3g}"
            if c not in apply:
                np.testing.assert_array_equal(ours[c], batch[b, c])


def test_constant_channel_matches_auglab(capi, auglab_zscore):
    batch = np.full((1, 1, 4, 5, 6), 3.25, np.float32)
    ref = auglab_zscore(apply_to_channel=[0], p=1.0)(torch.from_numpy(batch.copy())).numpy()
    np.testing.assert_array_equal(_ours(capi, {}, batch[0]), ref[0])
