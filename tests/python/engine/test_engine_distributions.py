"""Engine-owner sanity check: augmentd's sampler (draw_params) vs batchgeneratorsv2's get_parameters (KS tests).

Small sample counts (2,000) keep this fast; tests/python/parity holds the full ≥10k-draw suite.
"""
import numpy as np
import pytest
import torch
from scipy.stats import ks_2samp

from batchgeneratorsv2.transforms.intensity.brightness import MultiplicativeBrightnessTransform
from batchgeneratorsv2.transforms.intensity.contrast import BGContrast
from batchgeneratorsv2.transforms.intensity.gamma import GammaTransform
from batchgeneratorsv2.transforms.noise.gaussian_blur import GaussianBlurTransform
from batchgeneratorsv2.transforms.spatial.low_resolution import SimulateLowResolutionTransform
from batchgeneratorsv2.transforms.spatial.spatial import SpatialTransform

N = 2000


def _draw(capi, kind, config, shape, p=1.0, first=0):
    out, _ = capi.run({"op": "draw_params", "transform": {"kind": kind, "config": config}, "apply_probability": p,
                       "seed": 5, "first_sample_index": first, "count": N, "image_shape": list(shape)})
    return out


def _ks(a, b):
    assert len(a) > 50 and len(b) > 50
    assert ks_2samp(np.asarray(a, float), np.asarray(b, float)).pvalue > 0.001


def test_apply_probability(capi):
    out = _draw(capi, "mirror", {"allowed_axes": [0, 1, 2]}, (1, 4, 4, 4), p=0.15)
    frac = np.mean([d["applied"] for d in out])
    assert abs(frac - 0.15) < 0.03


def test_gamma_bgcontrast(capi):
    img = torch.zeros((2, 2, 2, 2))
    t = GammaTransform(BGContrast((0.7, 1.5)), 0, False, 1, 1)
    ref = [g for _ in range(N // 2) for g in t.get_parameters(image=img)["gamma"].tolist()]
    ours = [g for d in _draw(capi, "gamma", {"gamma": {"bg_contrast": [0.7, 1.5]}, "p_invert_image": 0,
                                             "synchronize_channels": False, "p_per_channel": 1, "p_retain_stats": 1},
                             (2, 2, 2, 2)) for g in d["gamma"]]
    _ks(ours, ref)


def test_brightness_multipliers(capi):
    img = torch.zeros((1, 2, 2, 2))
    t = MultiplicativeBrightnessTransform(BGContrast((0.75, 1.25)), False, 1)
    ref = [t.get_parameters(image=img)["multipliers"][0].item() for _ in range(N)]
    ours = [d["multipliers"][0] for d in _draw(capi, "multiplicative_brightness",
                                                 {"multiplier_range": {"bg_contrast": [0.75, 1.25]},
                                                  "synchronize_channels": False}, (1, 2, 2, 2))]
    _ks(ours, ref)


def test_blur_sigmas_and_channel_probability(capi):
    img = torch.zeros((3, 8, 8, 8))
    t = GaussianBlurTransform((0.5, 1.0), False, False, 0.5)
    refp = [t.get_parameters(image=img) for _ in range(N)]
    ours = _draw(capi, "gaussian_blur", {"blur_sigma": [0.5, 1.0], "p_per_channel": 0.5}, (3, 8, 8, 8))
    _ks([sum(d["apply_to_channel"]) for d in ours], [int(p["apply_to_channel"].sum()) for p in refp])
    _ks([s for d in ours for c in d["sigmas"] for s in c], [s for p in refp for c in p["sigmas"] for s in c])


def test_low_resolution_scales(capi):
    img = torch.zeros((2, 8, 8, 8))
    t = SimulateLowResolutionTransform((0.5, 1), False, True, None, None, 0.5)
    refp = [t.get_parameters(image=img) for _ in range(N)]
    ours = _draw(capi, "simulate_low_resolution", {"scale": [0.5, 1], "synchronize_channels": False,
                                                   "synchronize_axes": True, "p_per_channel": 0.5}, (2, 8, 8, 8))
    _ks([len(d["apply_to_channel"]) for d in ours], [len(p["apply_to_channel"]) for p in refp])
    _ks([s[0] for d in ours for s in d["scales"]], [s[0].item() for p in refp for s in p["scales"]])


def test_spatial_rotation_and_scale(capi):
    img = torch.zeros((1, 20, 20, 20))
    cfg = dict(patch_size=[8, 8, 8], patch_center_dist_from_border=0, random_crop=False, p_rotation=0.2,
               rotation=(-0.5236, 0.5236), p_scaling=0.2, scaling=(0.7, 1.4), p_synchronize_scaling_across_axes=1,
               bg_style_seg_sampling=False)
    t = SpatialTransform(**cfg)
    refp = [t.get_parameters(image=img) for _ in range(N * 2)]
    ours = _draw(capi, "spatial", {**cfg, "rotation": [-0.5236, 0.5236], "scaling": [0.7, 1.4]}, (1, 20, 20, 20))
    ours = ours + _draw(capi, "spatial", {**cfg, "rotation": [-0.5236, 0.5236], "scaling": [0.7, 1.4]},
                        (1, 20, 20, 20), first=N)
    frac_ref = np.mean([p["affine"] is not None for p in refp])
    frac_ours = np.mean([d["affine"] is not None for d in ours])
    assert abs(frac_ref - frac_ours) < 0.04
    # Affine entries (rotation+scale mixed) have the same distribution.
    _ks([np.asarray(d["affine"])[0, 0] for d in ours if d["affine"] is not None],
        [p["affine"][0, 0] for p in refp if p["affine"] is not None])
    _ks([np.linalg.det(np.asarray(d["affine"])) for d in ours if d["affine"] is not None],
        [np.linalg.det(p["affine"]) for p in refp if p["affine"] is not None])
