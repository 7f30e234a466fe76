"""Parity of nnUNetTrainerDAExt's CPU-side TorchIO / AugLab transforms with their references, parameters injected:
``swap`` (TorchIO ``Swap``), ``anisotropy`` (TorchIO ``RandomAnisotropy`` with its get_params replaced by the
injected draw), ``torchio_affine`` (TorchIO ``Affine``) and ``shape_crop`` (AugLab's CPU ``ShapeTransform`` with
``random.randint`` replaced by the injected sizes), ``elastic_deformation`` (TorchIO ``ElasticDeformation``). Plus the samplers' distributions (KS / chi-square).

augmentd draws with its own Philox streams (``draw_params``); torch's / Python's RNG cannot be aligned, so the same
parameters go to both sides. TorchIO and AugLab (GPL-3.0) are test references only (scripts/setup.sh installs them).

Tolerances:
* swap, shape_crop: exact (both only move float32 values; swap compares non-overlapping pairs only, where torch's
  copy order cannot matter — the overlapping order is pinned by augment/transforms/swap/swap_test.cc).
* anisotropy, torchio_affine images: 1e-5 of the channel's range per voxel, except a fraction <= 1e-3 of voxels
  (SimpleITK and augmentd compute the continuous index in double with a different operation order; a sample point
  within ~1e-12 of ITK's inside bound or of a nearest-neighbour half may fall on the other side).
* torchio_affine labels: mismatch fraction <= 1e-3, for the same reason.
* elastic_deformation: as torchio_affine (ITK evaluates the B-spline weights with its own recurrences: the
  displacement differs in the last bits).
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from augment_capi import require_auglab

tio = pytest.importorskip("torchio")
torch = pytest.importorskip("torch")

SHAPES = [(1, 20, 23, 17), (2, 32, 30, 41), (1, 24, 26, 1)]


def _image(seed, shape):
    rng = np.random.default_rng(seed)
    img = rng.normal(1.0, 0.5, size=shape).astype(np.float32)
    img += np.linspace(0, 2, shape[1], dtype=np.float32)[None, :, None, None]
    return img


def _labels(seed, shape):
    rng = np.random.default_rng(seed + 100)
    # blocky labels (as a segmentation), not salt-and-pepper
    lab = np.zeros(shape[1:], np.int16)
    for v in range(1, 4):
        lo = [int(rng.integers(0, max(1, s // 2))) for s in shape[1:]]
        hi = [min(s, l + max(1, s // 2)) for l, s in zip(lo, shape[1:])]
        lab[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]] = v
    return lab[None]


def _layout(shape):
    return list(shape) if shape[-1] != 1 else list(shape[:-1])


def _ours(capi, kind, config, params, image, seg=None):
    img = image if image.shape[-1] != 1 else image[..., 0]
    arrays = {"image": img}
    if seg is not None:
        arrays["seg"] = seg if seg.shape[-1] != 1 else seg[..., 0]
    _, t = capi.run({"op": "apply_transform", "transform": {"kind": kind, "config": config}, "params": params},
                    **arrays)
    out_seg = t["seg"].reshape(seg.shape) if seg is not None else None
    return t["image"].reshape(image.shape), out_seg


def _subject(image, seg=None):
    d = {"img": tio.ScalarImage(tensor=torch.from_numpy(image.copy()))}
    if seg is not None:
        d["seg"] = tio.LabelMap(tensor=torch.from_numpy(seg.astype(np.int64)))
    return tio.Subject(**d)


def _check_image(ours, theirs, tol=1e-5, frac=1e-3, what=""):
    worst_frac = 0.0
    for c in range(ours.shape[0]):
        rng = float(theirs[c].max() - theirs[c].min()) or 1.0
        bad = np.abs(ours[c].astype(np.float64) - theirs[c]) > tol * rng
        worst_frac = max(worst_frac, float(bad.mean()))
    assert worst_frac <= frac, f"{what}: {worst_frac:.3g} of voxels beyond {tol:g} of the range"
    return worst_frac


# ---- swap -------------------------------------------------------------------------------------------------------
def _disjoint(a, b, p):
    return any(a[i] + p[i] <= b[i] or b[i] + p[i] <= a[i] for i in range(3))


@pytest.mark.parametrize("shape", SHAPES)
def test_swap_matches_torchio(capi, shape):
    patch = [5, 4, 3] if shape[-1] != 1 else [5, 4, 1]
    config = {"patch_size": patch, "num_iterations": 30}
    kept_total = 0
    for seed in (1, 2):
        image = _image(seed, shape)
        seg = _labels(seed, shape)
        for params in capi.draw_params("swap", config, _layout(shape), seed, 2):
            locs = [l for l in params["locations"] if _disjoint(l[0], l[1], patch)]
            kept_total += len(locs)
            params = {"patch_size": patch, "locations": locs}
            ours, ours_seg = _ours(capi, "swap", config, params, image, seg)
            swap = tio.Swap(patch_size=tuple(patch), locations=[(tuple(a), tuple(b)) for a, b in locs])
            theirs = swap(_subject(image))["img"].data.numpy()
            np.testing.assert_array_equal(ours, theirs)
            np.testing.assert_array_equal(ours_seg, seg)  # labels untouched (TorchIO: ScalarImages only)
    assert kept_total > 40


def test_swap_corners_are_uniform_on_torchios_range(capi):
    """Each corner coordinate ~ randint(0, size − patch − 1) (torch.randint's exclusive bound): chi-square."""
    from scipy import stats
    params = capi.draw_params("swap", {"patch_size": [3, 5, 2], "num_iterations": 20}, [1, 9, 12, 6], 7, 100)
    corners = np.array([c for p in params for l in p["locations"] for c in l])  # (4000, 3)
    for axis, m in enumerate((9 - 3, 12 - 5, 6 - 2)):
        counts = np.bincount(corners[:, axis], minlength=m)
        assert len(counts) == m, f"axis {axis}: drew {len(counts) - 1} >= {m}"
        assert stats.chisquare(counts).pvalue > 0.001, (axis, counts)


# ---- anisotropy -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES)
def test_anisotropy_matches_torchio(capi, shape, monkeypatch):
    config = {"axes": [0, 1, 2], "downsampling": [1.5, 7]}
    worst = 0.0
    for seed in (1, 2, 3):
        image = _image(seed, shape)
        seg = _labels(seed, shape)
        for params in capi.draw_params("anisotropy", config, _layout(shape), seed, 3):
            ours, ours_seg = _ours(capi, "anisotropy", config, params, image, seg)
            t = tio.RandomAnisotropy(axes=(0, 1, 2), downsampling=(1.5, 7))
            monkeypatch.setattr(t, "get_params", lambda axes, rng, p=params: (p["axis"], p["downsampling"]))
            theirs = t(_subject(image, seg))
            worst = max(worst, _check_image(ours, theirs["img"].data.numpy(), what=str(params)))
            np.testing.assert_array_equal(ours_seg, seg)  # scalars_only
    print(f"anisotropy: worst fraction beyond tolerance {worst:.3g}")


def test_anisotropy_draws_follow_torchio(capi):
    from scipy import stats
    params = capi.draw_params("anisotropy", {"axes": [0, 2], "downsampling": 7}, [1, 8, 8, 8], 3, 2000)
    m = np.array([p["downsampling"] for p in params])
    axes = np.array([p["axis"] for p in params])
    assert stats.kstest((m - 1) / 6, "uniform").pvalue > 0.001  # downsampling=7 → U(1, 7)
    assert set(axes.tolist()) == {0, 2}
    assert stats.binomtest(int((axes == 0).sum()), len(axes), 0.5).pvalue > 0.001


# ---- torchio_affine ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("center", ["image", "origin"])
def test_torchio_affine_matches_torchio(capi, shape, center):
    config = {"scales": [0.8, 1.25], "degrees": 20, "translation": [2, 3, 1.5], "center": center}
    if center == "origin":
        config.update(degrees=4, translation=1, scales=0.05)  # about voxel 0: keep some of the image in view
    worst_img = worst_lab = 0.0
    for seed in (1, 2, 3):
        image = _image(seed, shape)
        seg = _labels(seed, shape)
        for params in capi.draw_params("torchio_affine", config, _layout(shape), seed, 3):
            ours, ours_seg = _ours(capi, "torchio_affine", config, params, image, seg)
            t = tio.Affine(scales=params["scales"], degrees=params["degrees"], translation=params["translation"],
                           center=center)
            theirs = t(_subject(image, seg))
            worst_img = max(worst_img, _check_image(ours, theirs["img"].data.numpy(), what=str(params)))
            mism = float((ours_seg != theirs["seg"].data.numpy()).mean())
            assert mism <= 1e-3, (params, mism)
            worst_lab = max(worst_lab, mism)
            assert (ours_seg != seg).mean() > 0 or params["degrees"] == [0, 0, 0]
    print(f"torchio_affine: worst image fraction {worst_img:.3g}, worst label mismatch {worst_lab:.3g}")


def test_torchio_affine_auglab_config_draws(capi):
    """AugLab's tio.RandomAffine(degrees=10, translation=(0.1, 0.1, 0.1), scales=(0.9, 1.1)): every value uniform."""
    from scipy import stats
    config = {"degrees": 10, "translation": [0.1, 0.1, 0.1], "scales": [0.9, 1.1]}
    params = capi.draw_params("torchio_affine", config, [1, 8, 8, 8], 11, 2000)
    for key, lo, hi in (("scales", 0.9, 1.1), ("degrees", -10, 10), ("translation", -0.1, 0.1)):
        v = np.array([p[key] for p in params])
        for a in range(3):
            assert stats.kstest((v[:, a] - lo) / (hi - lo), "uniform").pvalue > 0.001, (key, a)
    s = np.array([p["scales"] for p in params])
    assert abs(np.corrcoef(s[:, 0], s[:, 1])[0, 1]) < 0.08


# ---- elastic_deformation ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("grid,disp,locked", [(7, 4.0, 2), ([5, 6, 7], [2.0, 3.0, 1.5], 1), (4, 1.0, 0)])
def test_elastic_deformation_matches_torchio(capi, shape, grid, disp, locked):
    config = {"num_control_points": grid, "max_displacement": disp, "locked_borders": locked}
    worst_img = worst_lab = 0.0
    for seed in (1, 2):
        image = _image(seed, shape)
        seg = _labels(seed, shape)
        for params in capi.draw_params("elastic_deformation", config, _layout(shape), seed, 2):
            ours, ours_seg = _ours(capi, "elastic_deformation", config, params, image, seg)
            n = params["num_control_points"]
            cp = np.array(params["control_points"], np.float32).reshape(*n, 3)
            md = disp if isinstance(disp, list) else [disp] * 3
            t = tio.ElasticDeformation(control_points=cp, max_displacement=tuple(md))
            with _no_raise():
                theirs = t(_subject(image, seg))
            worst_img = max(worst_img, _check_image(ours, theirs["img"].data.numpy(), what=str(config)))
            mism = float((ours_seg != theirs["seg"].data.numpy()).mean())
            assert mism <= 1e-3, (config, mism)
            worst_lab = max(worst_lab, mism)
            assert (ours != image).mean() > 0.1  # the field moved something
    print(f"elastic_deformation: worst image fraction {worst_img:.3g}, worst label mismatch {worst_lab:.3g}")


class _no_raise:
    def __enter__(self):
        import warnings
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)  # TorchIO's folding warning for large displacements

    def __exit__(self, *exc):
        return self._w.__exit__(*exc)


def test_elastic_deformation_draws_follow_torchio(capi):
    """(2·U − 1)·max_displacement per component on the unlocked nodes (KS), zeros on grid axes 0/1's locked planes."""
    from scipy import stats
    params = capi.draw_params("elastic_deformation", {"num_control_points": 6, "max_displacement": [2, 3, 4]},
                              [1, 8, 8, 8], 5, 40)
    cp = np.array([p["control_points"] for p in params], np.float64).reshape(-1, 6, 6, 6, 3)
    locked = np.zeros((6, 6, 6), bool)
    locked[:2] = locked[-2:] = True
    locked[:, :2] = locked[:, -2:] = True
    assert (cp[:, locked] == 0).all()
    for d, m in enumerate((2, 3, 4)):
        v = cp[:, ~locked, d].ravel()
        assert stats.kstest((v / m + 1) / 2, "uniform").pvalue > 0.001, d


# ---- shape_crop (AugLab's CPU ShapeTransform) -------------------------------------------------------------------
@pytest.fixture(scope="module")
def auglab_shape():
    require_auglab()
    from auglab.transforms.cpu.spatial import ShapeTransform
    return ShapeTransform


@pytest.mark.parametrize("shape", [(1, 20, 23, 17), (2, 31, 30, 8)])
@pytest.mark.parametrize("ignore", [[1, 2], []])
def test_shape_crop_matches_auglab(capi, auglab_shape, monkeypatch, shape, ignore):
    config = {"shape_min": 1, "ignore_axes": ignore}
    for seed in (1, 2):
        image = _image(seed, shape)
        seg = _labels(seed, shape)
        for params in capi.draw_params("shape_crop", config, list(shape), seed, 4):
            free = [n for a, n in enumerate(params["new_shape"]) if a not in ignore]
            it = iter(free)
            monkeypatch.setattr(random, "randint", lambda a, b: next(it))
            t = auglab_shape(shape_min=1, ignore_axes=tuple(ignore))
            ref_img, ref_seg = t._apply_to_image(torch.from_numpy(image.copy()), torch.from_numpy(seg.copy()),
                                                 **t.get_parameters())
            monkeypatch.undo()
            ours, ours_seg = _ours(capi, "shape_crop", config, params, image, seg)
            starts = [max(0, s // 2 - n // 2) for s, n in zip(shape[1:], params["new_shape"])]
            box = tuple(slice(a, a + n) for a, n in zip(starts, params["new_shape"]))
            np.testing.assert_array_equal(ours[(slice(None),) + box], ref_img.numpy())
            np.testing.assert_array_equal(ours_seg[(slice(None),) + box], ref_seg.numpy())
            outside = np.ones(shape[1:], bool)
            outside[box] = False
            assert (ours[:, outside] == 0).all() and (ours_seg[:, outside] == 0).all()


def test_shape_crop_sizes_are_uniform_integers(capi):
    """new_a ~ randint(shape_min, S_a) inclusive on the free axes (Python's random.randint): chi-square."""
    from scipy import stats
    params = capi.draw_params("shape_crop", {"shape_min": 3, "ignore_axes": [1, 2]}, [1, 12, 5, 5], 2, 3000)
    n = np.array([p["new_shape"] for p in params])
    assert (n[:, 1:] == 5).all()
    counts = np.bincount(n[:, 0], minlength=13)[3:]
    assert len(counts) == 10 and (counts > 0).all()
    assert stats.chisquare(counts).pvalue > 0.001
