"""Parity of augmentd's nnUNetTrainerDA5 transforms (reference §5.1) with batchgeneratorsv2 0.3.5.

Same method as ``test_intensity_parity.py``: a fresh random image (never zeros), parameters drawn by bgv2's own
``get_parameters`` (numpy and torch seeded), the same parameters injected into augmentd (``apply_transform``),
bgv2's ``apply`` run on a copy. Float outputs must agree to 1e-4 of each channel's value range; outputs that are
selections of input values (median filter, rot90/transpose, blank rectangles with constants) must be identical.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bgv2_ref import (apply_bgv2, assert_float_parity, augmentd_apply, build_bgv2, check_image_parity,
                      draw_bgv2_params, make_image, make_seg, params_to_json, shape_channel_cases)

SHAPES = {
    "iso": (24, 24, 24),
    "aniso": (12, 40, 27),
    "2d": (33, 28),
}
CHANNELS = (1, 3)
SEEDS = (1, 2, 3, 4)


def _cases(shapes=SHAPES):
    return shape_channel_cases(shapes, CHANNELS)


_check = check_image_parity


def _da5_rectangle_config(shape):
    # nnUNetTrainerDA5: rectangle_size=[[max(1, p // 10), p // 3] for p in patch_size], torch.mean, (1, 5)
    return dict(rectangle_size=[[max(1, p // 10), p // 3] for p in shape], rectangle_value="mean",
                num_rectangles=[1, 5], force_square=False, p_per_channel=0.5)


# ------------------------------------------------------------------------------------------------ blank rectangle

@pytest.mark.parametrize("shape_name,channels", list(_cases()))
def test_blank_rectangle_da5_parity(capi, shape_name, channels):
    rng = np.random.default_rng(500 + channels)
    image = make_image(rng, channels, SHAPES[shape_name])
    config = _da5_rectangle_config(SHAPES[shape_name])
    t = build_bgv2("blank_rectangle", config)
    n_boxes = 0
    for seed in SEEDS:
        params = draw_bgv2_params(t, image, seed)
        n_boxes += sum(len(r) for r in params["rectangles"])
        _check(capi, "blank_rectangle", config, params, image, what=f"seed {seed}")
    assert n_boxes > 0


@pytest.mark.parametrize("variant", ["constant", "fixed_size", "scalar_size_square", "overlapping_means"])
def test_blank_rectangle_variants_parity(capi, variant):
    rng = np.random.default_rng(17)
    shape = (14, 16, 18)
    image = make_image(rng, 2, shape)
    config = {
        "constant": dict(rectangle_size=[[2, 6], [2, 7], [2, 8]], rectangle_value=-3.25, num_rectangles=[2, 4],
                         force_square=False, p_per_channel=1.0),
        "fixed_size": dict(rectangle_size=[3, 4, 5], rectangle_value=1.5, num_rectangles=3, p_per_channel=1.0),
        "scalar_size_square": dict(rectangle_size=[[2, 9], [2, 9], [2, 9]], rectangle_value="mean",
                                   num_rectangles=[1, 3], force_square=True, p_per_channel=1.0),
        # many big boxes: later means read earlier fills
        "overlapping_means": dict(rectangle_size=[[6, 12], [6, 12], [6, 12]], rectangle_value="mean",
                                  num_rectangles=[6, 9], p_per_channel=1.0),
    }[variant]
    t = build_bgv2("blank_rectangle", config)
    for seed in SEEDS:
        params = draw_bgv2_params(t, image, seed)
        _check(capi, "blank_rectangle", config, params, image, exact=variant in ("constant", "fixed_size"),
               what=f"{variant} seed {seed}")


def test_blank_rectangle_uniform_value_is_drawn_by_augmentd(capi):
    """[lo, hi] values: bgv2 draws them at apply time; augmentd carries them in "values" (one per box)."""
    rng = np.random.default_rng(18)
    image = make_image(rng, 2, (10, 11, 12))
    config = dict(rectangle_size=[[2, 5], [2, 5], [2, 5]], rectangle_value=[5.0, 6.0], num_rectangles=[1, 3],
                  p_per_channel=1.0)
    req = {"op": "draw_params", "transform": {"kind": "blank_rectangle", "config": config}, "seed": 3, "count": 20,
           "image_shape": [2, 10, 11, 12]}
    draws, _ = capi.run(req)
    for d in draws:
        d.pop("applied")
        assert [len(v) for v in d["values"]] == [len(r) for r in d["rectangles"]]
        _, out = augmentd_apply(capi, "blank_rectangle", config, d, image=image)
        for c, (boxes, vals) in enumerate(zip(d["rectangles"], d["values"])):
            assert all(5.0 <= v < 6.0 for v in vals)
            lb, ub = boxes[-1]
            box = out["image"][c][tuple(slice(a, b) for a, b in zip(lb, ub))]
            assert np.all(box == np.float32(vals[-1]))


# ------------------------------------------------------------------------------------------------ brightness additive

BRIGHTNESS_CONFIGS = {
    "da5": dict(mu=0, sigma=0.5, synchronize_channels=False, p_per_channel=0.5),
    "synchronized": dict(mu=0.1, sigma=0.4, synchronize_channels=True, p_per_channel=0.7),
}


@pytest.mark.parametrize("shape_name,channels", list(_cases()))
@pytest.mark.parametrize("cfg_name", list(BRIGHTNESS_CONFIGS))
def test_brightness_additive_parity(capi, shape_name, channels, cfg_name):
    rng = np.random.default_rng(600 + channels)
    image = make_image(rng, channels, SHAPES[shape_name])
    config = BRIGHTNESS_CONFIGS[cfg_name]
    t = build_bgv2("brightness_additive", config)
    for seed in SEEDS:
        params = draw_bgv2_params(t, image, seed)
        ours, ref = _check(capi, "brightness_additive", config, params, image, what=f"seed {seed}")
        np.testing.assert_array_equal(ours, ref)  # one float32 add per voxel: bit-identical


# ------------------------------------------------------------------------------------------------ sharpening

SHARPEN_CONFIGS = {
    "da5": dict(strength=[0.1, 1], p_same_for_each_channel=0, p_per_channel=0.5),
    "same_and_clamp": dict(strength=[0.5, 2.0], p_same_for_each_channel=0.5, p_per_channel=1.0,
                           p_clamp_intensities=0.5),
    "constant": dict(strength=0.2, p_per_channel=1.0),
}


@pytest.mark.parametrize("shape_name,channels", list(_cases()))
@pytest.mark.parametrize("cfg_name", list(SHARPEN_CONFIGS))
def test_sharpening_parity(capi, shape_name, channels, cfg_name):
    rng = np.random.default_rng(700 + channels)
    image = make_image(rng, channels, SHAPES[shape_name])
    config = SHARPEN_CONFIGS[cfg_name]
    t = build_bgv2("sharpening", config)
    for seed in SEEDS:
        params = draw_bgv2_params(t, image, seed)
        _check(capi, "sharpening", config, params, image, what=f"seed {seed}")


def test_sharpening_thin_axes(capi):
    """Axes of length 1 and 2: replicate padding reads the voxel itself. (bgv2 crashes on a length-1 axis other
    than the first: its `.squeeze()` drops it.)"""
    rng = np.random.default_rng(71)
    config = dict(strength=[0.1, 1], p_per_channel=1.0)
    for shape in [(1, 9, 7), (2, 3, 5), (3, 2)]:
        image = make_image(rng, 2, shape)
        params = draw_bgv2_params(build_bgv2("sharpening", config), image, 5)
        _check(capi, "sharpening", config, params, image, what=f"shape {shape}")


# ------------------------------------------------------------------------------------------------ median filter

MEDIAN_SHAPES = {"small": (11, 13, 9), "aniso": (4, 20, 17), "2d": (23, 19)}


@pytest.mark.parametrize("shape_name,channels", list(_cases(MEDIAN_SHAPES)))
def test_median_filter_da5_parity(capi, shape_name, channels):
    """DA5: filter_size (2, 8) → k in 2..7 per channel; scipy's window origin for even k, reflect border."""
    rng = np.random.default_rng(800 + channels)
    image = make_image(rng, channels, MEDIAN_SHAPES[shape_name])
    config = dict(filter_size=[2, 8], p_same_for_each_channel=0, p_per_channel=0.5)
    t = build_bgv2("median_filter", config)
    for seed in SEEDS:
        params = draw_bgv2_params(t, image, seed)
        # exact on every CPU: a median selects one of the input values, no arithmetic
        _check(capi, "median_filter", config, params, image, exact=True, what=f"seed {seed} {params}")


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6, 7, 8, 9])
def test_median_filter_every_size_bit_identical(capi, k):
    """Every window size on a shape with axes shorter than the window (multiple reflections)."""
    rng = np.random.default_rng(81 + k)
    image = make_image(rng, 1, (3, 10, 6))
    image[0, :, :2, :] = np.round(image[0, :, :2, :])  # ties
    config = dict(filter_size=k, p_per_channel=1.0)
    params = {"filter_sizes": [k], "apply_channel": [True]}
    _check(capi, "median_filter", config, params, image, exact=True, what=f"k={k}")


# ------------------------------------------------------------------------------------------------ local transforms

DA5_SCALE = {"axis_size_log_uniform": [6, 1]}  # nnU-Net's _brightnessadditive_localgamma_transform_scale
DA5_STRENGTH = {"mixture": [{"weight": 0.5, "range": [-5, -1]}, {"weight": 0.5, "range": [1, 5]}]}
DA5_LOCAL_GAMMA = {"mixture": [{"weight": 0.5, "range": [0.01, 0.8]}, {"weight": 0.5, "range": [1.5, 4]}]}

GRADIENT_CONFIGS = {
    "da5": dict(scale=DA5_SCALE, loc=[-0.5, 1.5], max_strength=DA5_STRENGTH, mean_centered=False,
                same_for_all_channels=False, p_per_channel=0.5),
    "bgv2_defaults_mean_centered": dict(scale=[5, 15], loc=[-1, 2], max_strength=[0.5, 2.0], p_per_channel=1.0),
    "shared_clipped": dict(scale=[3, 8], loc=[0, 1], max_strength=-2.0, same_for_all_channels=True,
                           mean_centered=True, clip_intensities=True, p_per_channel=0.7),
}
LOCAL_SHAPES = {"iso": (24, 24, 24), "aniso": (12, 40, 27), "2d": (33, 28)}


@pytest.mark.parametrize("shape_name,channels", list(_cases(LOCAL_SHAPES)))
@pytest.mark.parametrize("cfg_name", list(GRADIENT_CONFIGS))
def test_brightness_gradient_additive_parity(capi, shape_name, channels, cfg_name):
    """bgv2's dense kernels injected (bgv2 format), and augmentd's compact form of its own draws replayed."""
    rng = np.random.default_rng(900 + channels)
    image = make_image(rng, channels, LOCAL_SHAPES[shape_name])
    config = GRADIENT_CONFIGS[cfg_name]
    t = build_bgv2("brightness_gradient_additive", config)
    applied = 0
    for seed in SEEDS:
        params = draw_bgv2_params(t, image, seed)
        applied += sum(k is not None for k in params["kernels"])
        _check(capi, "brightness_gradient_additive", config, params, image, what=f"seed {seed}")
    assert applied > 0


@pytest.mark.parametrize("cfg_name", list(GRADIENT_CONFIGS))
def test_brightness_gradient_additive_compact_params_rebuild_bgv2_kernels(capi, cfg_name):
    """augmentd's reported ``kernel_params`` (loc·S, scale, strength) rebuild, through bgv2's own kernel code with
    the same numbers, the kernel augmentd added (so a reported draw can be replayed in bgv2)."""
    from batchgeneratorsv2.transforms.local.local_transform import LocalTransform
    config = GRADIENT_CONFIGS[cfg_name]
    shape = (3, 20, 18, 16)
    image = make_image(np.random.default_rng(91), shape[0], shape[1:])
    draws, _ = capi.run({"op": "draw_params", "transform": {"kind": "brightness_gradient_additive",
                                                            "config": config},
                         "seed": 11, "count": 6, "image_shape": list(shape)})
    for d in draws:
        d.pop("applied")
        _, out = augmentd_apply(capi, "brightness_gradient_additive", config, d, image=image)
        kernels = []
        for c, kp in enumerate(d["kernel_params"]):
            if kp is None:
                kernels.append(None)
                continue
            lt = LocalTransform(scale=0, loc=0)
            it_loc, it_scale = iter([l / s for l, s in zip(kp["loc"], shape[1:])]), iter(kp["scale"])
            lt.loc, lt.scale = (lambda *_: next(it_loc)), (lambda *_: next(it_scale))
            k = lt._generate_kernel(shape[1:])
            if config.get("mean_centered", True):
                k -= k.mean()
            k /= np.abs(k).max()
            k *= kp["strength"]
            kernels.append(k)
        ref = apply_bgv2(build_bgv2("brightness_gradient_additive", config), {"kernels": kernels}, image=image)
        assert_float_parity(out["image"], ref["image"], what="replayed kernel_params")


LOCAL_GAMMA_CONFIGS = {
    "da5": dict(scale=DA5_SCALE, loc=[-0.5, 1.5], gamma=DA5_LOCAL_GAMMA, same_for_all_channels=False,
                p_per_channel=0.5),
    "bgv2_defaults": dict(scale=[5, 15]),
}


@pytest.mark.parametrize("shape_name,channels", list(_cases(LOCAL_SHAPES)))
@pytest.mark.parametrize("cfg_name", list(LOCAL_GAMMA_CONFIGS))
def test_local_gamma_parity(capi, shape_name, channels, cfg_name):
    rng = np.random.default_rng(950 + channels)
    image = make_image(rng, channels, LOCAL_SHAPES[shape_name])
    config = LOCAL_GAMMA_CONFIGS[cfg_name]
    t = build_bgv2("local_gamma", config)
    applied = 0
    for seed in SEEDS:
        params = draw_bgv2_params(t, image, seed)
        applied += sum(g is not None for g in params["gammas"])
        _check(capi, "local_gamma", config, params, image, what=f"seed {seed} gammas {params['gammas']}")
    assert applied > 0


# ------------------------------------------------------------------------------------------------ rot90 / transpose

def _check_image_and_seg(capi, kind, config, params, image, seg):
    """Bit-exact: rot90 / transpose only move voxels, so the reference is the same on every CPU."""
    ref = apply_bgv2(build_bgv2(kind, config), params, image=image, seg=seg)
    _, out = augmentd_apply(capi, kind, config, params_to_json(kind, params), image=image, seg=seg)
    for key in ("image", "seg"):
        assert out[key].dtype == ref[key].dtype and out[key].shape == ref[key].shape, key
        np.testing.assert_array_equal(out[key], ref[key], err_msg=f"{kind} {key} params {params}")


ROT_CASES = {
    "da5_iso": ((24, 24, 24), dict(num_axis_combinations=1, num_rot_per_combination=[0, 1, 2, 3],
                                   allowed_axes=[0, 1, 2])),
    "da5_two_equal": ((10, 16, 16), dict(num_axis_combinations=1, num_rot_per_combination=[0, 1, 2, 3],
                                         allowed_axes=[1, 2])),
    "bgv2_default_multi": ((9, 9, 9), dict(num_axis_combinations=[1, 3], allowed_axes=[0, 1, 2])),
    "2d": ((20, 20), dict(num_axis_combinations=2, num_rot_per_combination=[1, 2, 3], allowed_axes=[0, 1])),
}


@pytest.mark.parametrize("name", list(ROT_CASES))
def test_rot90_parity(capi, name):
    shape, config = ROT_CASES[name]
    rng = np.random.default_rng(31)
    image = make_image(rng, 2, shape)
    seg = make_seg(rng, shape, 4)
    t = build_bgv2("rot90", config)
    for seed in range(8):
        params = draw_bgv2_params(t, image, seed)
        _check_image_and_seg(capi, "rot90", config, params, image, seg)


@pytest.mark.parametrize("k", [1, 2, 3, -1, 5])
@pytest.mark.parametrize("dims", [[1, 2], [1, 3], [2, 3]])
def test_rot90_every_k_and_dims(capi, k, dims):
    rng = np.random.default_rng(32)
    image = make_image(rng, 1, (7, 7, 7))
    seg = make_seg(rng, (7, 7, 7), 3)
    config = dict(num_axis_combinations=1, allowed_axes=[0, 1, 2])
    _check_image_and_seg(capi, "rot90", config, {"num_rot_per_combination": [k], "axis_combinations": [dims]},
                         image, seg)


TRANSPOSE_CASES = {
    "da5_iso": ((12, 12, 12), [0, 1, 2]),
    "da5_two_equal": ((10, 16, 16), [1, 2]),
    "single_axis_identity": ((10, 16, 16), [2]),
    "2d": ((15, 15), [0, 1]),
}


@pytest.mark.parametrize("name", list(TRANSPOSE_CASES))
def test_transpose_axes_parity(capi, name):
    shape, axes = TRANSPOSE_CASES[name]
    config = dict(allowed_axes=axes)
    rng = np.random.default_rng(33)
    image = make_image(rng, 3, shape)
    seg = make_seg(rng, shape, 4)
    t = build_bgv2("transpose_axes", config)
    for seed in range(8):
        params = draw_bgv2_params(t, image, seed)
        _check_image_and_seg(capi, "transpose_axes", config, params, image, seg)


def test_transpose_axes_rejects_unequal_axes_like_bgv2(capi):
    image = make_image(np.random.default_rng(34), 1, (10, 12, 12))
    with pytest.raises(ValueError):
        draw_bgv2_params(build_bgv2("transpose_axes", dict(allowed_axes=[0, 1, 2])), image, 1)
    with pytest.raises(Exception, match="INVALID_ARGUMENT"):
        capi.run({"op": "draw_params", "transform": {"kind": "transpose_axes", "config": {"allowed_axes": [0, 1, 2]}},
                  "count": 1, "image_shape": [1, 10, 12, 12]})


# ------------------------------------------------------------------------------------------------ nnunet_da5 preset

def _nnunet_da5():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from nnunetv2.training.nnUNetTrainer.variants.data_augmentation import nnUNetTrainerDA5 as m
    return m


def da5_geometry(patch_size):
    from types import SimpleNamespace
    fake = SimpleNamespace(configuration_manager=SimpleNamespace(patch_size=list(patch_size)),
                           print_to_log_file=lambda *a, **k: None)
    return _nnunet_da5().nnUNetTrainerDA5.configure_rotation_dummyDA_mirroring_and_inital_patch_size(fake)


def da5_transforms(case: dict):
    from test_pipeline_parity import nnunet_ds_scales
    rot, dummy, _, mirror = da5_geometry(case["patch_size"])
    return _nnunet_da5().nnUNetTrainerDA5.get_training_transforms(
        case["patch_size"], rot, nnunet_ds_scales(case["strides"]), mirror, dummy,
        use_mask_for_norm=case.get("use_mask_for_norm"), is_cascaded=False, foreground_labels=None,
        regions=case.get("regions"), ignore_label=case.get("ignore_label"))


def da5_entries(t):
    """(kind, apply_probability, inner transform, OneOf group) of DA5's ComposeTransforms, flattening its
    OneOfTransforms (group 1, 2, ... in order) and dropping the pseudo-2D converters."""
    from batchgeneratorsv2.transforms.utils.pseudo2d import Convert2DTo3DTransform, Convert3DTo2DTransform
    from batchgeneratorsv2.transforms.utils.random import OneOfTransform, RandomTransform
    from test_pipeline_parity import CLASS_TO_KIND
    out, group = [], 0

    def one(x, g):
        p = 1.0
        if isinstance(x, RandomTransform):
            p, x = x.apply_probability, x.transform
        out.append((CLASS_TO_KIND[type(x)], float(p), x, g))

    for x in t.transforms:
        if isinstance(x, (Convert3DTo2DTransform, Convert2DTo3DTransform)):
            continue
        if isinstance(x, OneOfTransform):
            group += 1
            for m in x.list_of_transforms:
                one(m, group)
        else:
            one(x, 0)
    return out


DA5_CASES = {
    "3d_iso_2ch_mask": dict(patch_size=(24, 24, 24), channels=2, n_labels=3, use_mask_for_norm=[True, False],
                            strides=[[1, 1, 1], [2, 2, 2], [2, 2, 2]]),
    "3d_two_equal": dict(patch_size=(20, 32, 32), channels=1, n_labels=3, strides=[[1, 1, 1], [2, 2, 2]]),
    "3d_all_different": dict(patch_size=(18, 24, 30), channels=1, n_labels=3, strides=[[1, 1, 1], [2, 2, 2]]),
    "dummy2d": dict(patch_size=(8, 40, 32), channels=1, n_labels=3, strides=[[1, 1, 1], [1, 2, 2]]),
    "regions_ignore": dict(patch_size=(20, 20, 20), channels=1, n_labels=4, regions=[[1, 2, 3], [2, 3], [3]],
                           ignore_label=4, strides=[[1, 1, 1], [2, 2, 2]]),
    "2d": dict(patch_size=(48, 48), channels=1, n_labels=3, strides=[[1, 1], [2, 2]]),
}


def _da5_norm(kind, attr, val):
    """bgv2 attribute -> the C ABI config value augmentd must report."""
    m = _nnunet_da5()
    callables = {
        m._brightnessadditive_localgamma_transform_scale: DA5_SCALE,
        m._brightness_gradient_additive_max_strength: DA5_STRENGTH,
        m._local_gamma_gamma: DA5_LOCAL_GAMMA,
    }
    if callable(val) and not hasattr(val, "contrast_range") and val in callables:
        return callables[val]
    if isinstance(val, set):
        return sorted(int(x) for x in val)
    from test_pipeline_parity import _norm
    return _norm(val)


@pytest.mark.parametrize("name", list(DA5_CASES))
def test_da5_initial_patch_size_matches_nnunet(capi, name):
    patch = DA5_CASES[name]["patch_size"]
    rot, dummy, init, mirror = da5_geometry(patch)
    j, _ = capi.run({"op": "initial_patch_size", "preset": "nnunet_da5", "trainer_config": {"patch_size": list(patch)}})
    assert list(j["initial_patch_size"]) == [int(x) for x in init]
    assert bool(j["do_dummy_2d_data_aug"]) == bool(dummy)
    np.testing.assert_allclose(j["rotation_for_da"], rot, rtol=0, atol=1e-12)
    assert tuple(j["mirror_axes"]) == tuple(mirror)


@pytest.mark.parametrize("patch", [(128, 128, 128), (96, 160, 160), (20, 320, 256), (512, 512), (40, 56, 40)],
                         ids=lambda p: "x".join(map(str, p)))
def test_da5_initial_patch_size_reference_patches(capi, patch):
    _, _, init, _ = da5_geometry(patch)
    j, _ = capi.run({"op": "initial_patch_size", "preset": "nnunet_da5", "trainer_config": {"patch_size": list(patch)}})
    assert list(j["initial_patch_size"]) == [int(x) for x in init]


@pytest.mark.parametrize("name", list(DA5_CASES))
def test_da5_preset_matches_nnunet_transform_list(capi, name):
    from test_pipeline_parity import trainer_config
    case = DA5_CASES[name]
    spec, _ = capi.run({"op": "preset", "preset": "nnunet_da5", "trainer_config": trainer_config(case)})
    ours = spec["transforms"]
    ref = da5_entries(da5_transforms(case))
    assert [t["kind"] for t in ours] == [k for k, _, _, _ in ref], "transform order differs from nnU-Net DA5's"
    assert [t.get("one_of_group", 0) for t in ours] == [g for _, _, _, g in ref], "OneOf groups differ"
    _, dummy, init, _ = da5_geometry(case["patch_size"])
    assert list(spec["input_patch_size"]) == [int(x) for x in init]
    skip = {"benchmark", "upmodes", "benchmark_use_fft", "benchmark_num_runs"}
    for t, (kind, p, bg, _) in zip(ours, ref):
        assert t["apply_probability"] == pytest.approx(p), f"{kind}: apply_probability {t['apply_probability']} != {p}"
        cfg = t["config"]
        if kind == "spatial":
            assert bool(cfg.get("dummy_2d", False)) == bool(dummy)
        for attr, val in vars(bg).items():
            if attr.startswith("_") or attr in skip:
                continue
            if kind == "convert_segmentation_to_regions" and attr == "regions":
                assert [r if isinstance(r, list) else [r] for r in cfg["regions"]] == \
                    [[int(x) for x in r.tolist()] for r in val]
                continue
            if kind == "blank_rectangle" and attr == "color_fn":
                assert val.rectangle_value is torch.mean and cfg["rectangle_value"] == "mean"
                continue
            assert attr in cfg, f"{kind}: config lacks bgv2 attribute {attr!r} (= {val!r})"
            want, got = _da5_norm(kind, attr, val), cfg[attr]
            if attr == "patch_center_dist_from_border":
                got = got * len(want) if isinstance(got, list) and len(got) == 1 else got
            if isinstance(want, (list, float, int)) and not isinstance(want, bool) and want is not None:
                np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float),
                                           rtol=0, atol=1e-12, err_msg=f"{kind}.{attr}")
            else:
                assert got == want, f"{kind}.{attr}: augmentd {got!r} != nnU-Net {want!r}"


def _da5_inputs(case, b, seed):
    _, _, init, _ = da5_geometry(case["patch_size"])
    shape = tuple(int(x) for x in init)
    rng = np.random.default_rng(seed)
    imgs = np.stack([make_image(rng, case["channels"], shape) for _ in range(b)])
    segs = np.stack([make_seg(rng, shape, case["n_labels"], ignore_label=case.get("ignore_label"))
                     for _ in range(b)])
    return imgs, segs


@pytest.mark.parametrize("name", list(DA5_CASES))
def test_da5_pipeline_shapes_dtypes_and_labels_match_nnunet(capi, name):
    """run_pipeline with the preset vs nnU-Net's DA5 pipeline on the same inputs (own RNGs): output shapes, dtypes,
    DS levels and label sets agree, and the image stays finite."""
    from test_pipeline_parity import trainer_config
    case = DA5_CASES[name]
    b = 6
    imgs, segs = _da5_inputs(case, b, 21)
    j, out = capi.run({"op": "run_pipeline", "preset": "nnunet_da5", "trainer_config": trainer_config(case),
                       "seed": 3, "threads": 2}, image=imgs, seg=segs)
    t = da5_transforms(case)
    torch.manual_seed(3)
    np.random.seed(3)
    with torch.no_grad():
        ref = [t(image=torch.from_numpy(imgs[i].copy()), segmentation=torch.from_numpy(segs[i].copy()))
               for i in range(b)]
    ref_img = np.stack([r["image"].numpy() for r in ref])
    assert out["image"].dtype == ref_img.dtype and out["image"].shape == ref_img.shape
    assert np.isfinite(out["image"]).all()
    levels = sorted(k for k in out if k.startswith("seg_"))
    assert len(levels) == len(ref[0]["segmentation"])
    for k, key in enumerate(levels):
        r = np.stack([x["segmentation"][k].numpy() for x in ref])
        assert out[key].shape == r.shape and out[key].dtype == r.dtype, key
        if r.dtype != np.bool_:
            assert -1 not in set(np.unique(out[key]).tolist())
    assert len(j["samples"]) == b and len(j["samples"][0]["transforms"]) == len(da5_entries(t))


def test_da5_one_of_groups_fire_exclusively_with_nnunet_frequencies(capi):
    """3000 tiny samples: every DA5 entry fires with nnU-Net's probability (OneOf members p/2), the two members of a
    group never fire together, and augmentd's reported parameters are in bgv2 format."""
    from scipy import stats
    from test_pipeline_parity import trainer_config
    case = dict(patch_size=(12, 12, 12), channels=1, n_labels=2, strides=[[1, 1, 1], [2, 2, 2]])
    n = 3000
    _, _, init, _ = da5_geometry(case["patch_size"])
    rng = np.random.default_rng(5)
    imgs = rng.standard_normal((n, 1, *[int(x) for x in init])).astype(np.float32) + 0.1
    segs = rng.integers(0, 2, size=(n, 1, *[int(x) for x in init])).astype(np.int16)
    j, _ = capi.run({"op": "run_pipeline", "preset": "nnunet_da5", "trainer_config": trainer_config(case),
                     "seed": 9, "threads": 2}, image=imgs, seg=segs)
    entries = da5_entries(da5_transforms(case))
    flags = np.array([[t["applied"] for t in s["transforms"]] for s in j["samples"]])
    for i, (kind, p, _, g) in enumerate(entries):
        eff = p / 2 if g else p
        k = int(flags[:, i].sum())
        if eff in (0.0, 1.0):
            assert k == n * eff, f"{kind}: {k}/{n}"
        else:
            pv = stats.binomtest(k, n, eff).pvalue
            assert pv > 0.01, f"entry {i} ({kind}, group {g}): applied {k}/{n}, expected {eff} (p={pv:.3g})"
    for g in (1, 2):
        cols = [i for i, e in enumerate(entries) if e[3] == g]
        assert len(cols) == 2 and not np.any(flags[:, cols[0]] & flags[:, cols[1]]), f"group {g} fired twice"


def test_one_of_group_must_be_consecutive(capi):
    pipe = {"transforms": [
        {"kind": "brightness_additive", "config": {"mu": 0, "sigma": 0.1}, "one_of_group": 1},
        {"kind": "mirror", "config": {"allowed_axes": [0]}},
        {"kind": "brightness_additive", "config": {"mu": 0, "sigma": 0.1}, "one_of_group": 1}]}
    with pytest.raises(Exception, match="INVALID_ARGUMENT.*one_of_group"):
        capi.run({"op": "preset", "pipeline": pipe})


# ------------------------------------------------------------------------------------------------ rician noise

@pytest.mark.parametrize("variance", [0.02, 0.1, 0.5])
@pytest.mark.parametrize("shape_name,channels", list(_cases({"iso": (20, 22, 24), "2d": (60, 50)})))
def test_rician_noise_statistics(capi, variance, shape_name, channels):
    """The noise fields cannot be injected (augmentd's are NormalAt streams): with the same variance on the same
    image, bgv2 and augmentd keep the image's mean and unbiased std, and the residuals out − in have the same
    distribution (two-sample KS)."""
    from scipy import stats
    shape = {"iso": (20, 22, 24), "2d": (60, 50)}[shape_name]
    image = make_image(np.random.default_rng(40 + channels), channels, shape)
    config = dict(noise_variance=[0.0, 1.0])
    torch.manual_seed(1)
    ref = apply_bgv2(build_bgv2("rician_noise", config), {"variance": variance}, image=image)["image"]
    _, out = augmentd_apply(capi, "rician_noise", config,
                            {"variance": variance, "noise_key": {"seed": 3, "sample_index": 1, "transform_index": 0}},
                            image=image)
    ours = out["image"]
    assert ours.dtype == np.float32 and ours.shape == image.shape
    for o in (ours, ref):
        assert abs(o.mean() - image.mean()) < 1e-4 * image.std()
        assert abs(o.std(ddof=1) - image.std(ddof=1)) < 1e-4 * image.std()
    r_o, r_r = (ours - image).ravel(), (ref - image).ravel()
    p = stats.ks_2samp(r_o, r_r).pvalue
    assert p > 0.001, f"residual distributions differ: KS p={p:.3g}, ours sd {r_o.std():.4g} bgv2 sd {r_r.std():.4g}"
