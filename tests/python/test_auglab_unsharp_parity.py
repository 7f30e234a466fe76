"""Parity of augmentd's ``unsharp_mask`` with AugLab's own ``RandomConvTransformGPU(kernel_type="UnsharpMask")`` (the
installed ``auglab`` package, GPL-3.0: a test dependency only, run on the CPU; install: see
test_auglab_zscore_parity.py). AugLab draws σ = torch.rand(3)·sigma once per call; the test records that draw and
injects it (``{"sigma": [...]}``). Tolerance: 1e-5 of each channel's range (torch's vectorised exp and conv3d order).
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


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("retain", [False, True])
@pytest.mark.parametrize("shape,channels,apply,sigma,amount", [((9, 11, 13), 1, [0], 1.0, 1.5),
                                                               ((6, 12, 10), 2, [1], 2.5, 0.7)])
def test_unsharp_mask_matches_auglab(capi, auglab_conv, monkeypatch, seed, retain, shape, channels, apply, sigma,
                                     amount):
    rng = np.random.default_rng(51 + seed)
    batch = (rng.standard_normal((2, channels, *shape)) ** 3 + rng.uniform(-5, 5)).astype(np.float32)
    drawn = []
    real = torch.rand

    def recording(*args, **kwargs):
        v = real(*args, **kwargs)
        drawn.append(v.clone())
        return v
    t = auglab_conv(kernel_type="UnsharpMask", sigma=sigma, unsharp_amount=amount, apply_to_channel=apply,
                    retain_stats=retain, p=1.0)
    torch.manual_seed(seed)
    with monkeypatch.context() as m:
        m.setattr(torch, "rand", recording)
        ref = t(torch.from_numpy(batch.copy())).numpy()
    draws = [d for d in drawn if d.numel() == 3]
    assert len(draws) == 1, f"AugLab drew {[d.shape for d in drawn]}"
    sig = (draws[0] * sigma).tolist()  # float32, as AugLab multiplies
    config = {"sigma": sigma, "unsharp_amount": amount, "apply_to_channel": apply, "retain_stats": retain}
    for b in range(batch.shape[0]):
        _, out = capi.run({"op": "apply_transform", "transform": {"kind": "unsharp_mask", "config": config},
                           "params": {"sigma": sig}}, image=batch[b])
        ours = out["image"]
        for c in range(channels):
            if c not in apply:
                np.testing.assert_array_equal(ours[c], batch[b, c])
                continue
            r = ref[b, c]
            tol = 1e-5 * max(float(r.max() - r.min()), 1e-6)
            err = float(np.abs(ours[c].astype(np.float64) - r).max())
            assert err <= tol, f"sample {b} channel {c} sigma {sig}: max |err| {err:.3g} > {tol:.3g}"


def test_unsharp_sigma_draws_are_uniform(capi):
    from scipy import stats
    params = capi.draw_params("unsharp_mask", {"sigma": 2.0}, [1, 5, 5, 5], 7, 2000)
    s = np.array([p["sigma"] for p in params]) / 2.0
    for d in range(3):
        assert stats.kstest(s[:, d], "uniform").pvalue > 0.01, d
