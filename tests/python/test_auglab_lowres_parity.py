"""Parity of augmentd's ``auglab_low_resolution`` with AugLab's own ``RandomLowResTransformGPU`` ("lowres") and
``RandomAcqTransformGPU`` ("acq") (the installed ``auglab`` package, GPL-3.0: a test dependency only, run on the CPU;
see test_auglab_zscore_parity.py for the install). Parameters are injected: the test builds AugLab's ``scale`` /
``crop`` tensors (B, 3) in its x, y, z order, calls the class's own ``apply_transform`` (and, for "lowres", the same
call on the mask, as AugLab's mask path does), and gives augmentd the same values in its axis order (axis 0 = AugLab's
z). "lowres" is pure indexing (nearest) and a zeroed box: identical. "acq" (crop 1: AugLab's Acq raises for a crop
below 1) is torch's trilinear resize: within 1e-5
of the channel's range (float32 weights, the summation order may differ by an ulp). The sampler: KS tests.
"""
from __future__ import annotations

import numpy as np
import pytest

from augment_capi import require_auglab

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def auglab_spatial():
    require_auglab()
    from auglab.transforms.gpu import spatial
    return spatial


def _params(rng, n, scale_lo, crop_lo):
    scale = rng.uniform(scale_lo, 1.0, (n, 3)).astype(np.float32)
    crop = rng.uniform(crop_lo, 1.0, (n, 3)).astype(np.float32)
    scale[0, 1] = 1.0  # one axis left at full resolution
    crop[1, :] = 1.0   # one sample keeps the whole box
    return scale, crop


def _ours(capi, config, image, seg, scale_xyz, crop_xyz):
    params = {"scale": [float(v) for v in scale_xyz[::-1]], "crop": [float(v) for v in crop_xyz[::-1]]}
    arrays = {"image": image} if seg is None else {"image": image, "seg": seg}
    _, t = capi.run({"op": "apply_transform", "transform": {"kind": "auglab_low_resolution", "config": config},
                     "params": params}, **arrays)
    return t


@pytest.mark.parametrize("shape", [(12, 10, 9), (7, 16, 13), (20, 5, 11)])
def test_lowres_matches_auglab_on_image_and_mask(capi, auglab_spatial, shape):
    rng = np.random.default_rng(sum(shape))
    n, c = 3, 2
    image = rng.standard_normal((n, c, *shape)).astype(np.float32)
    seg = rng.integers(0, 4, (n, 1, *shape)).astype(np.int16)
    scale, crop = _params(rng, n, 0.3, 0.5)
    t = auglab_spatial.RandomLowResTransformGPU(scale=(0.3, 1.0), crop=(0.5, 1.0), p=1.0)
    params = {"scale": torch.from_numpy(scale), "crop": torch.from_numpy(crop)}
    ref_img = t.apply_transform(torch.from_numpy(image.copy()), params, t.flags).numpy()
    ref_seg = t.apply_transform(torch.from_numpy(seg.astype(np.float32)), params, t.flags).numpy()
    for b in range(n):
        out = _ours(capi, {"mode": "lowres", "scale": [0.3, 1.0], "crop": [0.5, 1.0]}, image[b], seg[b], scale[b],
                    crop[b])
        np.testing.assert_array_equal(out["image"], ref_img[b], err_msg=f"sample {b} image")
        np.testing.assert_array_equal(out["seg"].astype(np.float32), ref_seg[b], err_msg=f"sample {b} seg")
    assert (ref_img == 0).any()  # the crop zeroed something


@pytest.mark.parametrize("apply", [[0], [0, 2]])
@pytest.mark.parametrize("shape", [(12, 10, 9), (16, 7, 13)])
def test_acq_matches_auglab(capi, auglab_spatial, shape, apply):
    rng = np.random.default_rng(7 + sum(shape) + len(apply))
    n, c = 3, 3
    image = (rng.standard_normal((n, c, *shape)) * 30 + 5).astype(np.float32)
    seg = rng.integers(0, 3, (n, 1, *shape)).astype(np.int16)
    scale, _ = _params(rng, n, 0.2, 0.6)
    crop = np.ones_like(scale)  # AugLab's Acq raises for a crop < 1 (its JSON keeps [1, 1])
    t = auglab_spatial.RandomAcqTransformGPU(scale=(0.2, 1.0), crop=(1.0, 1.0), apply_to_channel=apply, p=1.0)
    params = {"scale": torch.from_numpy(scale), "crop": torch.from_numpy(crop)}
    ref = t.apply_transform(torch.from_numpy(image.copy()), params, t.flags).numpy()
    for b in range(n):
        out = _ours(capi, {"mode": "acq", "scale": [0.2, 1.0], "apply_to_channel": apply},
                    image[b], seg[b], scale[b], crop[b])
        np.testing.assert_array_equal(out["seg"], seg[b])  # acq leaves the labels alone
        for ch in range(c):
            if ch not in apply:
                np.testing.assert_array_equal(out["image"][ch], image[b, ch])
                continue
            r = ref[b, ch]
            tol = 1e-5 * float(r.max() - r.min())
            err = float(np.abs(out["image"][ch].astype(np.float64) - r).max())
            assert err <= tol, f"sample {b} channel {ch}: max |err| {err:.3g} > {tol:.3g}"
    assert not np.array_equal(ref[:, apply[0]], image[:, apply[0]])


def test_draws_follow_auglab_ranges_and_one_dim_axes(capi):
    """AugLab's ShapeGenerator3D: per axis U(lo, hi), an axis outside one_dim's pick fixed at 1 (KS vs uniform)."""
    from scipy import stats
    config = {"mode": "lowres", "scale": [0.2, 1.0], "crop": [0.7, 1.0], "scale_axes": [1], "crop_axes": [0, 2]}
    params = capi.draw_params("auglab_low_resolution", config, [1, 8, 8, 8], 11, 2000)
    scale = np.array([p["scale"] for p in params])
    crop = np.array([p["crop"] for p in params])
    np.testing.assert_array_equal(scale[:, [0, 2]], 1.0)
    np.testing.assert_array_equal(crop[:, 1], 1.0)
    assert stats.kstest((scale[:, 1] - 0.2) / 0.8, "uniform").pvalue > 0.01
    for a in (0, 2):
        assert stats.kstest((crop[:, a] - 0.7) / 0.3, "uniform").pvalue > 0.01, a
    assert abs(np.corrcoef(crop[:, 0], crop[:, 2])[0, 1]) < 0.08
