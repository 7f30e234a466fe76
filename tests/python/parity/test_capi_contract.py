"""The C ABI contract the parity tests rely on (augment/capi.h): the registry, error statuses that name the field,
dtype handling, and the wrapper's copies. Bad input must come back as a status; nothing may abort the process.
"""

from __future__ import annotations

import numpy as np
import pytest

from augment_capi import listed_kinds
from bgv2_ref import KIND_TO_CLASS, apply_bgv2, build_bgv2, make_image, make_seg


def test_registry_lists_every_transform_kind(capi):
    j, tensors = capi.run({"op": "registry"})
    assert tensors == {}
    # every batchgeneratorsv2 kind nnU-Net uses (each with its bgv2 reference class), and exactly the kinds of the one
    # list augment/transforms/kinds.inc (the non-bgv2 extras' references are tests/python/test_mri_*.py,
    # test_auglab_*_parity.py, test_daext_cpu_parity.py, parity/test_cascade_parity.py)
    assert set(KIND_TO_CLASS) <= set(j["transforms"])
    assert sorted(j["transforms"]) == sorted(name for name, _, _ in listed_kinds())


GAMMA = {"gamma": {"bg_contrast": [0.7, 1.5]}, "p_invert_image": 0, "synchronize_channels": False,
         "p_per_channel": 1, "p_retain_stats": 1}


def _img(c=2, shape=(5, 6, 7)):
    return make_image(np.random.default_rng(0), c, shape)


@pytest.mark.parametrize("request_json,arrays,field", [
    ({"op": "no_such_op"}, {}, "op"),
    ({"op": "apply_transform", "transform": {"kind": "gammma", "config": {}}, "params": {}}, {"image": _img()},
     "transform.kind"),
    ({"op": "apply_transform", "transform": {"kind": "gamma", "config": dict(GAMMA, gamma=[2.0, 1.0])},
      "params": {}}, {"image": _img()}, "gamma"),
    ({"op": "apply_transform", "transform": {"kind": "gamma", "config": dict(GAMMA, p_per_channel=1.5)},
      "params": {}}, {"image": _img()}, "p_per_channel"),
    ({"op": "apply_transform", "transform": {"kind": "mirror", "config": {"allowed_axes": [0, 1, 2]}},
      "params": {"axes": [5]}}, {"image": _img()}, "axes"),
    ({"op": "apply_transform", "transform": {"kind": "multiplicative_brightness",
                                             "config": {"multiplier_range": [0.5, 2], "synchronize_channels": False}},
      "params": {"apply_to_channel": [7], "multipliers": [1.1]}}, {"image": _img()}, "apply_to_channel"),
    ({"op": "apply_transform", "transform": {"kind": "gaussian_blur", "config": {"blur_sigma": [0.5, 1.0]}},
      "params": {"apply_to_channel": [True, False], "sigmas": [[-1.0, 1.0, 1.0]]}}, {"image": _img()}, "sigmas"),
    ({"op": "apply_transform", "transform": {"kind": "gamma", "config": GAMMA}, "params": {}},
     {"image": _img().astype(np.float64)}, "image"),
    ({"op": "apply_transform", "transform": {"kind": "gamma", "config": GAMMA}, "params": {}},
     {"image": _img()[0, 0]}, "image"),
    ({"op": "apply_transform", "transform": {"kind": "spatial", "config": {"patch_size": [4, 4, 4],
                                                                           "patch_center_dist_from_border": 0,
                                                                           "random_crop": False}},
      "params": {"affine": [[1, 0], [0, 1]], "elastic_offsets": None, "center_location_in_pixels": [2.5, 3, 3.5]}},
     {"image": _img()}, "affine"),
    ({"op": "draw_params", "transform": {"kind": "gamma", "config": GAMMA}, "apply_probability": 1.5, "seed": 0,
      "first_sample_index": 0, "count": 3, "image_shape": [1, 4, 4, 4]}, {}, "apply_probability"),
    ({"op": "run_pipeline", "preset": "nnunet_default", "trainer_config": {"patch_size": [8, 8, 8]}, "seed": 0,
      "first_sample_index": 0, "threads": 1},
     {"image": np.ones((1, 1, 9, 9, 9), np.float32), "seg": np.ones((1, 1, 8, 9, 9), np.int16)}, "seg"),
    ({"op": "run_pipeline", "preset": "nnunet_default", "trainer_config": {"patch_size": [8, 8, 8]}, "seed": 0,
      "first_sample_index": 0, "threads": 1},
     {"image": np.ones((0, 1, 9, 9, 9), np.float32), "seg": np.ones((0, 1, 9, 9, 9), np.int16)}, "image"),
])
def test_bad_requests_return_invalid_argument_naming_the_field(capi, request_json, arrays, field):
    with pytest.raises(capi.AugmentdError) as e:
        capi.run(request_json, **arrays)
    assert e.value.code == "INVALID_ARGUMENT", e.value.status
    assert field in e.value.status, f"status does not name {field!r}: {e.value.status}"


def test_outputs_are_independent_writable_copies(capi):
    img = _img()
    _, a = capi.run({"op": "apply_transform", "transform": {"kind": "mirror", "config": {"allowed_axes": [0]}},
                     "params": {"axes": [0]}}, image=img)
    _, b = capi.run({"op": "apply_transform", "transform": {"kind": "mirror", "config": {"allowed_axes": [0]}},
                     "params": {"axes": [0]}}, image=img)
    assert a["image"].flags.writeable and a["image"].flags.c_contiguous
    a["image"][:] = 0
    np.testing.assert_array_equal(b["image"], img[:, ::-1])
    np.testing.assert_array_equal(img, _img())  # input untouched


def test_non_contiguous_input_is_accepted(capi):
    img = np.asfortranarray(_img())
    _, out = capi.run({"op": "apply_transform", "transform": {"kind": "mirror", "config": {"allowed_axes": [2]}},
                       "params": {"axes": [2]}}, image=img)
    np.testing.assert_array_equal(out["image"], img[:, :, :, ::-1])


def test_int8_labels_values_match_bgv2(capi):
    """int8 label input (allowed by the engine) gives bgv2's values. (bgv2 keeps int8; augmentd returns its
    internal int16 — see the report's open questions; nnU-Net itself always feeds int16.)"""
    seg = make_seg(np.random.default_rng(3), (6, 7, 8), 4).astype(np.int8)
    cfg = {"label_value": -1, "set_to": 0}
    ref = apply_bgv2(build_bgv2("remove_label", cfg), {}, seg=seg)["seg"]
    _, out = capi.run({"op": "apply_transform", "transform": {"kind": "remove_label", "config": cfg}, "params": {}},
                      seg=seg)
    np.testing.assert_array_equal(out["seg"].astype(np.int64), ref.astype(np.int64))
