"""Parity of augmentd's label/utility transforms with batchgeneratorsv2 0.3.5: MaskImageTransform,
RemoveLabelTransform (−1 → 0), ConvertSegmentationToRegionsTransform (bool regions, ignore label appended) and
DownsampleSegForDSTransform (nearest-exact pyramid, ``seg_0``, ``seg_1``, … in scale order). These have no random
parameters (``params = {}``); outputs must be bit-identical, dtypes included.
"""

from __future__ import annotations

import numpy as np
import pytest

from bgv2_ref import apply_bgv2, assert_float_parity, augmentd_apply, build_bgv2, make_image, make_seg


def _inputs(seed, channels, shape, n_labels, **kw):
    rng = np.random.default_rng(seed)
    return make_image(rng, channels, shape), make_seg(rng, shape, n_labels, **kw)


def _pyramid(out: dict) -> list:
    keys = sorted((k for k in out if k.startswith("seg_")), key=lambda k: int(k.split("_")[1]))
    assert keys == [f"seg_{i}" for i in range(len(keys))], f"pyramid tensors {sorted(out)}"
    return [out[k] for k in keys]


# ------------------------------------------------------------------------------------------------ mask image

@pytest.mark.parametrize("channels,apply_to", [(1, [0]), (4, [0, 2]), (4, [0, 1, 2, 3])])
def test_mask_image_parity(capi, channels, apply_to):
    image, seg = _inputs(10 + channels, channels, (14, 18, 16), 3)
    assert (seg < 0).any()
    config = dict(apply_to_channels=apply_to, channel_idx_in_seg=0, set_outside_to=0)
    ref = apply_bgv2(build_bgv2("mask_image", config), {}, image=image, seg=seg)
    _, out = augmentd_apply(capi, "mask_image", config, {}, image=image, seg=seg)
    np.testing.assert_array_equal(out["image"], ref["image"])
    np.testing.assert_array_equal(out["seg"], seg)  # seg untouched
    # only listed channels masked (bgv2 ≥ 0.3.2)
    for c in set(range(channels)) - set(apply_to):
        np.testing.assert_array_equal(out["image"][c], image[c])


# ------------------------------------------------------------------------------------------------ remove label

@pytest.mark.parametrize("seg_channels", [1, 2])
def test_remove_label_parity(capi, seg_channels):
    seg = make_seg(np.random.default_rng(20 + seg_channels), (12, 15, 17), 5, channels=seg_channels)
    assert (seg == -1).any()
    config = dict(label_value=-1, set_to=0)
    ref = apply_bgv2(build_bgv2("remove_label", config), {}, seg=seg)
    _, out = augmentd_apply(capi, "remove_label", config, {}, seg=seg)
    assert out["seg"].dtype == np.int16
    np.testing.assert_array_equal(out["seg"], ref["seg"])
    assert not (out["seg"] == -1).any()


# ------------------------------------------------------------------------------------------------ regions

REGION_CASES = {
    # BraTS-like nested regions, ignore label 4 appended as the last region (nnU-Net adds [ignore_label])
    "brats_ignore": ([[1, 2, 3], [2, 3], [3], 4], 5),
    "single_int_regions": ([1, 2, 3], 4),
    "overlapping": ([[1, 2], [2, 3], [1, 3, 5], [7]], 8),
}


@pytest.mark.parametrize("case", list(REGION_CASES))
def test_convert_segmentation_to_regions_parity(capi, case):
    regions, n_labels = REGION_CASES[case]
    _, seg = _inputs(30 + n_labels, 1, (13, 16, 19), n_labels, minus_one=False)
    config = dict(regions=regions, channel_in_seg=0)
    ref = apply_bgv2(build_bgv2("convert_segmentation_to_regions", config), {}, seg=seg)["seg"]
    _, out = augmentd_apply(capi, "convert_segmentation_to_regions", config, {}, seg=seg)
    assert ref.dtype == np.bool_
    assert out["seg"].dtype == np.bool_, f"regions dtype {out['seg'].dtype}, bgv2 gives bool"
    assert out["seg"].shape == (len(regions), *seg.shape[1:])
    np.testing.assert_array_equal(out["seg"], ref)


# ------------------------------------------------------------------------------------------------ DS downsampling

DS_CASES = {
    # nnU-Net 3d_fullres strides [[1,1,1],[2,2,2]x4,[1,2,2]] → scales (last dropped)
    "fullres": ((32, 48, 40), [[1, 1, 1], [0.5, 0.5, 0.5], [0.25, 0.25, 0.25], [0.125, 0.125, 0.125]]),
    # anisotropic first stride (1,2,2), odd sizes: round(S·s) and nearest-exact on non-integer factors
    "aniso_odd": ((20, 45, 37), [[1, 1, 1], [1, 0.5, 0.5], [0.5, 0.25, 0.25], [0.25, 0.125, 0.125]]),
    "scalar_scales": ((24, 24, 24), [1, 0.5, 0.25]),
}


@pytest.mark.parametrize("case", list(DS_CASES))
def test_downsample_seg_for_ds_parity(capi, case):
    shape, scales = DS_CASES[case]
    _, seg = _inputs(40 + len(shape), 1, shape, 6, minus_one=False)
    config = dict(ds_scales=scales)
    ref = apply_bgv2(build_bgv2("downsample_seg_for_ds", config), {}, seg=seg)["seg"]
    _, out = augmentd_apply(capi, "downsample_seg_for_ds", config, {}, seg=seg)
    _assert_pyramid_equal(_pyramid(out), ref, scales)


def _assert_pyramid_equal(pyr, ref, scales):
    assert len(pyr) == len(ref), f"{len(pyr)} levels, bgv2 {len(ref)}"
    for k, (o, r) in enumerate(zip(pyr, ref)):
        assert o.dtype == r.dtype, f"level {k}: dtype {o.dtype} != bgv2 {r.dtype}"
        assert o.shape == r.shape, f"level {k}: shape {o.shape} != bgv2 {r.shape}"
        np.testing.assert_array_equal(o, r, err_msg=f"DS level {k} (scale {scales[k]})")


@pytest.mark.parametrize("case", list(DS_CASES))
def test_regions_then_downsample_parity(capi, case):
    """Bool region targets through the DS pyramid (nnU-Net's region-based chain). The C ABI takes int8/int16
    labels only, so the chain runs as a two-transform custom pipeline (``run_pipeline``)."""
    shape, scales = DS_CASES[case]
    image, seg = _inputs(45 + len(shape), 1, shape, 6, minus_one=False)
    regions = [[1, 2, 3, 4, 5], [3, 4, 5], [5]]
    transforms = [("convert_segmentation_to_regions", dict(regions=regions, channel_in_seg=0)),
                  ("downsample_seg_for_ds", dict(ds_scales=scales))]
    dd = {"seg": seg}
    for kind, cfg in transforms:
        dd = apply_bgv2(build_bgv2(kind, cfg), {}, seg=dd["seg"])
    ref = dd["seg"]
    req = {"op": "run_pipeline", "seed": 1, "first_sample_index": 0, "threads": 1,
           "pipeline": {"transforms": [{"kind": k, "apply_probability": 1.0, "config": c} for k, c in transforms]}}
    _, out = capi.run(req, image=image[None], seg=seg[None])
    _assert_pyramid_equal([x[0] for x in _pyramid(out)], ref, scales)
    np.testing.assert_array_equal(out["image"][0], image)


def test_image_passes_through_seg_only_transforms(capi):
    """Seg-only transforms leave the image bit-identical (if augmentd returns it at all)."""
    image, seg = _inputs(50, 2, (8, 9, 10), 3)
    _, out = augmentd_apply(capi, "remove_label", dict(label_value=-1, set_to=0), {}, image=image, seg=seg)
    if "image" in out:
        assert_float_parity(out["image"], image, what="image through remove_label", rel_tol=0)
