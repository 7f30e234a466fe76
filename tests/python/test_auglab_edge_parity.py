"""Parity of augmentd's ``edge_convolution`` with AugLab's own ``RandomConvTransformGPU`` (kernel_type "Laplace" and
"Scharr", the installed ``auglab`` package, GPL-3.0: a test dependency only, run on the CPU; install: see
test_auglab_zscore_parity.py). Nothing is drawn (fixed kernels). Tolerance: 1e-5 of each channel's range (conv3d's
summation order depends on the CPU path; retain_stats uses torch's float32 statistics).
"""
from __future__ import annotations

import numpy as np
import pytest

from augment_capi import require_auglab

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def auglab_conv():
    require_auglab()
    from auglab.transforms.gpu.contrast import RandomConvTransformGPU
    return RandomConvTransformGPU


@pytest.mark.parametrize("kernel,absolute", [("Laplace", False), ("Scharr", False), ("Scharr", True)])
@pytest.mark.parametrize("retain", [False, True])
@pytest.mark.parametrize("shape,channels,apply", [((9, 11, 13), 1, [0]), ((6, 12, 10), 3, [0, 2])])
def test_edge_convolution_matches_auglab(capi, auglab_conv, kernel, absolute, retain, shape, channels, apply):
    rng = np.random.default_rng(41 + channels)
    batch = (rng.standard_normal((2, channels, *shape)) ** 3 + rng.uniform(-5, 5)).astype(np.float32)
    t = auglab_conv(kernel_type=kernel, absolute=absolute, apply_to_channel=apply, retain_stats=retain, p=1.0)
    ref = t(torch.from_numpy(batch.copy())).numpy()
    config = {"kernel_type": kernel.lower(), "absolute": absolute, "apply_to_channel": apply, "retain_stats": retain}
    for b in range(batch.shape[0]):
        _, out = capi.run({"op": "apply_transform", "transform": {"kind": "edge_convolution", "config": config},
                           "params": {}}, image=batch[b])
        ours = out["image"]
        for c in range(channels):
            if c not in apply:
                np.testing.assert_array_equal(ours[c], batch[b, c])
                continue
            r = ref[b, c]
            tol = 1e-5 * max(float(r.max() - r.min()), 1e-6)
            err = float(np.abs(ours[c].astype(np.float64) - r).max())
            assert err <= tol, f"{kernel} sample {b} channel {c}: max |err| {err:.3g} > {tol:.3g}"
