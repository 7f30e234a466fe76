"""Parity of augmentd's ``auglab_affine`` with AugLab's own ``RandomAffine3DCustom`` (kornia's affine: the installed
``auglab`` package and its kornia, GPL-3.0 / Apache-2.0: test dependencies only, run on the CPU; see
test_auglab_zscore_parity.py for the install; the shared fixtures come from augment/transforms/conftest.py).

The sampled parameters are injected (kornia's params dict — translations, center, scale, angles, the six shears —
on AugLab's side, ``{"angles", "scale", "translations", "shear"}`` on augmentd's): AugLab composes the matrix
(get_affine_matrix3d) and warps (warp_affine3d, align_corners=True, zero padding), image bilinear or nearest, mask
nearest. Images within 1e-4 of the input's range (kornia inverts and normalises in float32), labels equal but for
nearest ties (at most 1e-3 of the voxels). The draw: AffineGenerator3D (torch's seeded CPU generator) against
augmentd's stream, two-sample KS per parameter.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

from augment_capi import REPO_ROOT, require_auglab

torch = pytest.importorskip("torch")
stats = pytest.importorskip("scipy.stats")

SHEARS = ("sxy", "sxz", "syx", "syz", "szx", "szy")


@pytest.fixture(scope="module")
def auglab_spatial():
    require_auglab()
    from auglab.transforms.gpu import spatial
    return spatial


# angles (yaw, pitch, roll), scale (x, y, z), translations (voxels x, y, z), shears (degrees). Values chosen so that no
# source coordinate lands exactly on a nearest tie (k + 0.5), where float32 rounding on either side decides.
PARAMS = [
    dict(angles=[0, 0, 0], scale=[1, 1, 1], translations=[0, 0, 0], shear=[0] * 6),
    dict(angles=[8, -5, 3], scale=[1, 1, 1], translations=[0, 0, 0], shear=[0] * 6),
    dict(angles=[0, 0, 0], scale=[0.7713, 1.3127, 1.1291], translations=[1.6871, -0.5934, 0.9127], shear=[0] * 6),
    dict(angles=[0, 0, 0], scale=[1, 1, 1], translations=[0, 0, 0], shear=[6, -4, 9, 3, -7, 5]),
    dict(angles=[-9.5, 7.2, -4.1], scale=[1.35, 0.72, 0.95], translations=[-1.1, 2.3, -0.4],
         shear=[-8, 2.5, 4, -9, 1, -3]),
    dict(angles=[30, -45, 60], scale=[0.9, 1.0, 1.2], translations=[0.5, 0.5, -2.0], shear=[10, 10, -10, 5, 0, 2]),
]


def _kornia_params(ps, shape):
    d, h, w = shape
    f = lambda key: torch.tensor([p[key] for p in ps], dtype=torch.float32)  # noqa: E731
    out = {"translations": f("translations"), "scale": f("scale"), "angles": f("angles"),
           "center": torch.tensor([[w / 2 - 0.5, h / 2 - 0.5, d / 2 - 0.5]] * len(ps), dtype=torch.float32)}
    for k, name in enumerate(SHEARS):
        out[name] = torch.tensor([p["shear"][k] for p in ps], dtype=torch.float32)
    return out


@pytest.mark.parametrize("resample", ["bilinear", "nearest"])
@pytest.mark.parametrize("shape,channels", [((9, 11, 13), 1), ((12, 10, 8), 2)])
def test_affine_matches_auglab(capi, auglab_spatial, resample, shape, channels):
    rng = np.random.default_rng(11 + channels)
    n = len(PARAMS)
    # smooth-ish images (a sum of a ramp and noise) so interpolation differences show as such, labels in blobs
    zz, yy, xx = np.meshgrid(*[np.arange(s) for s in shape], indexing="ij")
    ramp = (0.7 * zz + 1.3 * yy - 0.9 * xx).astype(np.float32)
    batch = (rng.standard_normal((n, channels, *shape)) * 5 + 20 + ramp).astype(np.float32)
    seg = ((zz > shape[0] // 3).astype(np.int16) + (xx < shape[2] // 2) + (yy > shape[1] // 2))[None, None]
    seg = np.repeat(seg, n, axis=0).astype(np.int16)
    t = auglab_spatial.RandomAffine3DCustom(degrees=10, translate=[0.1, 0.1, 0.1], scale=[0.7, 1.4],
                                            shears=[-10, 10, -10, 10, -10, 10], resample=resample, p=1.0)
    params = _kornia_params(PARAMS, shape)
    x = torch.from_numpy(batch.copy())
    transform = t.compute_transformation(x, params, t.flags)
    ref = t.apply_transform(x, params, dict(t.flags), transform).numpy()
    ref_seg = t.apply_transform_mask(torch.from_numpy(seg.astype(np.float32)), params, dict(t.flags),
                                     transform).numpy()
    cfg = {"resample": resample}
    moved = 0
    for b in range(n):
        _, out = capi.run({"op": "apply_transform", "transform": {"kind": "auglab_affine", "config": cfg},
                           "params": PARAMS[b]}, image=batch[b], seg=seg[b])
        span = float(batch[b].max() - batch[b].min())
        err = np.abs(out["image"] - ref[b])
        if resample == "bilinear":
            assert err.max() <= 1e-4 * span, (b, err.max(), span)
        else:  # a nearest tie moves a voxel by one source voxel
            assert (err > 1e-4 * span).mean() <= 1e-3, (b, (err > 1e-4 * span).mean())
        mismatch = (out["seg"].astype(np.float32) != ref_seg[b]).mean()
        assert mismatch <= 1e-3, (b, mismatch)
        moved += not np.allclose(ref[b], batch[b])
    assert moved >= n - 1  # every non-identity draw moved the image (a test that could not fail otherwise)


@pytest.mark.parametrize("cfg", [
    dict(degrees=10, translate=[0.1, 0.1, 0.1], scale=[0.7, 1.4], shears=[-10, 10, -10, 10, -10, 10]),
    dict(degrees=[5, 15, 25], translate=[0.2, 0.0, 0.05], scale=[[0.9, 1.1], [0.5, 1.0], [1.0, 2.0]],
         shears=[[-2, 2], [0, 5], [-10, 0], [-1, 1], [3, 4], [-20, 20]]),
])
def test_affine_draws_match_affine_generator(capi, auglab_spatial, cfg):
    sys.path.insert(0, str(REPO_ROOT / "client" / "python" / "src"))
    from augmentd.nnunet.auglab_daext import auglab_affine_config
    n, shape = 3000, (10, 20, 30)
    torch.manual_seed(0)
    gen = auglab_spatial.rg.AffineGenerator3D(cfg["degrees"], cfg["translate"], cfg["scale"], cfg["shears"])
    gen.set_rng_device_and_dtype(torch.device("cpu"), torch.float32)
    theirs = gen((n, 1, *shape), same_on_batch=False)
    ours_cfg = auglab_affine_config(cfg["degrees"], cfg["translate"], cfg["scale"], cfg["shears"])
    ours = capi.draw_params("auglab_affine", ours_cfg, [1, *shape], 5, n)
    assert len(ours) == n
    for key in ("angles", "scale", "translations"):
        mine = np.array([p[key] for p in ours])
        ref = theirs[key].numpy()
        for a in range(3):
            if np.ptp(ref[:, a]) == 0:
                np.testing.assert_allclose(mine[:, a], ref[:, a], atol=1e-6)
                continue
            assert stats.ks_2samp(mine[:, a], ref[:, a]).pvalue > 1e-3, (key, a)
    mine = np.array([p["shear"] for p in ours])
    for k, name in enumerate(SHEARS):
        assert stats.ks_2samp(mine[:, k], theirs[name].numpy()).pvalue > 1e-3, name
    # a wrong range would fail: our draws against a generator with twice the rotation range
    deg = cfg["degrees"]
    wide_deg = 2 * deg if isinstance(deg, (int, float)) else [2 * v for v in deg]
    gen2 = auglab_spatial.rg.AffineGenerator3D(wide_deg, cfg["translate"], cfg["scale"], cfg["shears"])
    gen2.set_rng_device_and_dtype(torch.device("cpu"), torch.float32)
    wide = gen2((n, 1, *shape), same_on_batch=False)["angles"].numpy()
    assert stats.ks_2samp(np.array([p["angles"] for p in ours])[:, 0], wide[:, 0]).pvalue < 1e-3
