"""Parity of augmentd's ``auglab_flip`` with AugLab's own ``RandomFlipTransformGPU`` and its ``FlipGenerator3D`` (the
installed ``auglab`` package, GPL-3.0: a test dependency only, run on the CPU; see test_auglab_zscore_parity.py for the
install; the shared fixtures come from augment/transforms/conftest.py). The flip flags are injected (AugLab's
``params["flip"]`` rows, augmentd's ``{"flip": [...]}``): flips are copies, so image and labels must be identical.
The draw: the rate at which each axis ends up flipped, AugLab's generator (torch's seeded CPU generator) against
augmentd's stream, within binomial tolerance.
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


@pytest.mark.parametrize("flip_axis", [[0], [0, 1, 2], [2, 1]])
@pytest.mark.parametrize("shape,channels", [((9, 11, 13), 1), ((4, 6, 5), 3)])
def test_flip_matches_auglab(capi, auglab_spatial, flip_axis, shape, channels):
    rng = np.random.default_rng(7 + channels + len(flip_axis))
    flags = np.array([[1, 0, 0], [0, 1, 1], [1, 1, 1], [0, 0, 1], [0, 1, 0]], dtype=np.int8)
    n = len(flags)
    batch = (rng.standard_normal((n, channels, *shape)) * 20 + 60).astype(np.float32)
    seg = rng.integers(0, 4, (n, 1, *shape)).astype(np.int16)
    t = auglab_spatial.RandomFlipTransformGPU(flip_axis=flip_axis, p=1.0)
    params = {"flip": torch.from_numpy(flags)}
    ref = t.apply_transform(torch.from_numpy(batch.copy()), params, t.flags).numpy()
    ref_seg = t.apply_transform_mask(torch.from_numpy(seg.astype(np.float32)), params, t.flags).numpy()
    moved = 0
    for b in range(n):
        _, out = capi.run({"op": "apply_transform",
                           "transform": {"kind": "auglab_flip", "config": {"flip_axis": flip_axis}},
                           "params": {"flip": [int(v) for v in flags[b]]}}, image=batch[b], seg=seg[b])
        np.testing.assert_array_equal(out["image"], ref[b])
        np.testing.assert_array_equal(out["seg"].astype(np.float32), ref_seg[b])
        moved += not np.array_equal(ref[b], batch[b])
    assert moved >= 2  # the flags flipped something (a test that could not fail otherwise)


@pytest.mark.parametrize("flip_axis", [[0], [0, 1, 2], [1, 2]])
def test_flip_draws_match_flip_generator(capi, auglab_spatial, flip_axis):
    n = 4000
    torch.manual_seed(0)
    gen = auglab_spatial.FlipGenerator3D(flip_axis=flip_axis)
    gen.set_rng_device_and_dtype(torch.device("cpu"), torch.float32)
    theirs = gen((n, 1, 4, 4, 4), same_on_batch=False)["flip"].numpy().astype(bool)
    allowed = np.zeros(3, dtype=bool)
    allowed[flip_axis] = True
    theirs_flipped = theirs & allowed
    ours_params = capi.draw_params("auglab_flip", {"flip_axis": flip_axis}, [1, 4, 4, 4], 4, n)
    ours = np.array([p["flip"] for p in ours_params]).astype(bool)
    assert ours.shape == (n, 3)
    assert ours.any(axis=1).all() and theirs.any(axis=1).all()  # at least one flag per sample, both
    ours_flipped = ours & allowed
    tol = 4 * np.sqrt(0.25 / n) * np.sqrt(2)  # 4 sigma of a difference of two binomial rates
    np.testing.assert_allclose(ours_flipped.mean(axis=0), theirs_flipped.mean(axis=0), atol=tol, rtol=0)
    np.testing.assert_allclose(ours.mean(axis=0), theirs.mean(axis=0), atol=tol, rtol=0)
    # nothing flipped at all happens only when the flags outside flip_axis came up (never for all three axes)
    np.testing.assert_allclose((~ours_flipped.any(axis=1)).mean(), (~theirs_flipped.any(axis=1)).mean(), atol=tol)
