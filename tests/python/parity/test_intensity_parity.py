"""Parity of augmentd's intensity transforms with batchgeneratorsv2 0.3.5, transform by transform.

Every case: a fresh random image (never zeros), parameters drawn by bgv2's own ``get_parameters`` (numpy and
torch seeded), the same parameters injected into augmentd (``apply_transform``), bgv2's ``apply`` run on a copy;
float outputs must agree to 1e-4 of the output's value range.

Gaussian noise cannot be injected (the field is drawn inside), so it is tested statistically: (out − in)/σ must be
N(0, 1) (KS test), channels share σ when synchronised, and unselected channels are untouched.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from bgv2_ref import (NNUNET_CONFIGS, apply_bgv2, augmentd_apply, build_bgv2, check_image_parity, draw_bgv2_params,
                      make_image, params_to_json, shape_channel_cases)

SHAPES = {
    "iso": (32, 32, 32),
    "aniso": (12, 40, 27),
}
CHANNELS = (1, 4)


def _cases():
    return shape_channel_cases(SHAPES, CHANNELS)


def _params_with_some_channel(transform, image, seed0, key, want_nonempty=True, tries=50):
    """Draw bgv2 params from successive seeds until ``key`` (channel selection) is non-empty (or empty)."""
    for s in range(seed0, seed0 + tries):
        p = draw_bgv2_params(transform, image, s)
        sel = p[key]
        n = int(sel.sum()) if sel.dtype == torch.bool else int(sel.numel())
        if (n > 0) == want_nonempty:
            return p
    raise AssertionError("could not draw the wanted channel selection")


_check = check_image_parity


# ------------------------------------------------------------------------------------------------ blur

BLUR_CONFIGS = {
    "nnunet": NNUNET_CONFIGS["gaussian_blur"][1],
    # DA5's variant: one sigma for all axes of a channel, larger sigmas (kernel sizes up to 9)
    "da5_sync_axes": dict(blur_sigma=[0.3, 1.5], synchronize_channels=False, synchronize_axes=True,
                          p_per_channel=0.5, benchmark=False),
    # one flat sigma list shared by the selected channels
    "sync_channels": dict(blur_sigma=[0.5, 1.0], synchronize_channels=True, synchronize_axes=False,
                          p_per_channel=0.5, benchmark=False),
    "sync_channels_and_axes": dict(blur_sigma=[0.5, 1.0], synchronize_channels=True, synchronize_axes=True,
                                   p_per_channel=0.5, benchmark=False),
}


@pytest.mark.parametrize("shape_name,channels", list(_cases()))
@pytest.mark.parametrize("cfg_name", list(BLUR_CONFIGS))
def test_gaussian_blur_parity(capi, shape_name, channels, cfg_name):
    rng = np.random.default_rng(100 + channels)
    image = make_image(rng, channels, SHAPES[shape_name])
    config = BLUR_CONFIGS[cfg_name]
    t = build_bgv2("gaussian_blur", config)
    for seed in (1, 2, 3):
        params = _params_with_some_channel(t, image, seed * 17, "apply_to_channel")
        _check(capi, "gaussian_blur", config, params, image, what=f"seed {seed} params {params_to_json('gaussian_blur', params)}")


@pytest.mark.parametrize("sigma", [0.5, 0.58, 0.59, 0.6, 0.91, 0.92, 1.0, 1.25, 1.5])
def test_gaussian_blur_kernel_size_boundaries(capi, sigma):
    """Kernel size k = nearest_odd(6σ + 0.5) with banker's rounding (3 / 5 / 7 / 9 around the boundaries)."""
    rng = np.random.default_rng(7)
    image = make_image(rng, 1, (9, 14, 11))  # short axes: reflect padding dominates
    config = dict(blur_sigma=[0.3, 1.5], synchronize_channels=False, synchronize_axes=False, p_per_channel=1,
                  benchmark=False)
    params = {"apply_to_channel": torch.tensor([True]), "sigmas": [[sigma, sigma * 0.9, min(sigma * 1.1, 1.5)]]}
    _check(capi, "gaussian_blur", config, params, image)


def test_gaussian_blur_no_channel_is_identity(capi):
    rng = np.random.default_rng(8)
    image = make_image(rng, 2, (10, 12, 14))
    config = NNUNET_CONFIGS["gaussian_blur"][1]
    params = {"apply_to_channel": torch.tensor([False, False]), "sigmas": []}
    out, _ = _check(capi, "gaussian_blur", config, params, image)
    np.testing.assert_array_equal(out, image)


# ------------------------------------------------------------------------------------------------ brightness

@pytest.mark.parametrize("shape_name,channels", list(_cases()))
def test_multiplicative_brightness_parity(capi, shape_name, channels):
    rng = np.random.default_rng(200 + channels)
    image = make_image(rng, channels, SHAPES[shape_name])
    kind, config, _ = NNUNET_CONFIGS["multiplicative_brightness"]
    t = build_bgv2(kind, config)
    for seed in (11, 12, 13):
        params = draw_bgv2_params(t, image, seed)
        _check(capi, kind, config, params, image)


def test_multiplicative_brightness_channel_subset(capi):
    """p_per_channel < 1: only the listed channels are multiplied (others bit-identical)."""
    rng = np.random.default_rng(21)
    image = make_image(rng, 4, (10, 12, 14))
    config = dict(multiplier_range={"bg_contrast": [0.5, 2.0]}, synchronize_channels=False, p_per_channel=0.5)
    t = build_bgv2("multiplicative_brightness", config)
    params = _params_with_some_channel(t, image, 5, "apply_to_channel")
    out, _ = _check(capi, "multiplicative_brightness", config, params, image)
    untouched = sorted(set(range(4)) - set(params["apply_to_channel"].tolist()))
    np.testing.assert_array_equal(out[untouched], image[untouched])


# ------------------------------------------------------------------------------------------------ contrast

CONTRAST_CONFIGS = {
    "nnunet": NNUNET_CONFIGS["contrast"][1],
    "no_preserve_range": dict(contrast_range={"bg_contrast": [0.5, 2.0]}, preserve_range=False,
                              synchronize_channels=False, p_per_channel=0.5),
}


@pytest.mark.parametrize("shape_name,channels", list(_cases()))
@pytest.mark.parametrize("cfg_name", list(CONTRAST_CONFIGS))
def test_contrast_parity(capi, shape_name, channels, cfg_name):
    rng = np.random.default_rng(300 + channels)
    image = make_image(rng, channels, SHAPES[shape_name])
    config = CONTRAST_CONFIGS[cfg_name]
    t = build_bgv2("contrast", config)
    for seed in (31, 32, 33, 34):
        params = _params_with_some_channel(t, image, seed, "apply_to_channel")
        _check(capi, "contrast", config, params, image)


# ------------------------------------------------------------------------------------------------ gamma

@pytest.mark.parametrize("shape_name,channels", list(_cases()))
@pytest.mark.parametrize("cfg_name", ["gamma", "gamma_inverted"])
def test_gamma_parity(capi, shape_name, channels, cfg_name):
    rng = np.random.default_rng(400 + channels)
    image = make_image(rng, channels, SHAPES[shape_name])
    kind, config, _ = NNUNET_CONFIGS[cfg_name]
    t = build_bgv2(kind, config)
    for seed in (41, 42, 43):
        params = draw_bgv2_params(t, image, seed)
        _check(capi, kind, config, params, image)


def test_gamma_mixed_invert_and_retain(capi):
    """p_invert_image and p_retain_stats strictly between 0 and 1: per-channel flags are honoured."""
    rng = np.random.default_rng(44)
    image = make_image(rng, 4, (12, 14, 16))
    config = dict(gamma=[0.5, 2.0], p_invert_image=0.5, synchronize_channels=False, p_per_channel=1,
                  p_retain_stats=0.5)
    t = build_bgv2("gamma", config)
    seen = set()
    for seed in range(45, 60):
        params = draw_bgv2_params(t, image, seed)
        seen |= set(zip(params["invert_image"].tolist(), params["retain_stats"].tolist()))
        _check(capi, "gamma", config, params, image)
        if len(seen) == 4:
            break
    assert len(seen) == 4, f"test did not exercise all invert/retain combinations: {seen}"


# ------------------------------------------------------------------------------------------------ low resolution

LOWRES_CONFIGS = {
    "nnunet_3d": NNUNET_CONFIGS["simulate_low_resolution"][1],
    "nnunet_dummy2d": dict(NNUNET_CONFIGS["simulate_low_resolution"][1], ignore_axes=[0]),
    "per_axis_sync_channels": dict(scale=[0.3, 1], synchronize_channels=True, synchronize_axes=False,
                                   ignore_axes=[], allowed_channels=None, p_per_channel=1),
}


@pytest.mark.parametrize("shape_name,channels", list(_cases()))
@pytest.mark.parametrize("cfg_name", list(LOWRES_CONFIGS))
def test_simulate_low_resolution_parity(capi, shape_name, channels, cfg_name):
    rng = np.random.default_rng(500 + channels)
    image = make_image(rng, channels, SHAPES[shape_name])
    config = LOWRES_CONFIGS[cfg_name]
    t = build_bgv2("simulate_low_resolution", config)
    for seed in (51, 52, 53):
        params = _params_with_some_channel(t, image, seed * 3, "apply_to_channel")
        _check(capi, "simulate_low_resolution", config, params, image)


@pytest.mark.parametrize("scale", [0.75, 0.5, 0.625])
def test_simulate_low_resolution_bankers_rounding(capi, scale):
    """new_shape = round(S·s) with Python's round-half-even: 30·0.75 = 22.5 → 22, 26·0.75 = 19.5 → 20,
    13·0.5 = 6.5 → 6, 27·0.5 = 13.5 → 14; 0.625 gives .5 cases too (exact in binary)."""
    rng = np.random.default_rng(54)
    image = make_image(rng, 2, (26, 30, 13))
    config = dict(scale=[0.5, 1], synchronize_channels=False, synchronize_axes=True, ignore_axes=None,
                  allowed_channels=None, p_per_channel=1)
    params = {"apply_to_channel": torch.tensor([0, 1]),
              "scales": torch.tensor([[scale] * 3, [scale] * 3], dtype=torch.float32)}
    _check(capi, "simulate_low_resolution", config, params, image)
    image2 = make_image(rng, 1, (27, 13, 9))
    params2 = {"apply_to_channel": torch.tensor([0]), "scales": torch.tensor([[scale] * 3], dtype=torch.float32)}
    _check(capi, "simulate_low_resolution", config, params2, image2)


# ------------------------------------------------------------------------------------------------ synchronised channels

SYNC_CONFIGS = {
    "multiplicative_brightness": dict(multiplier_range={"bg_contrast": [0.75, 1.25]}, synchronize_channels=True,
                                      p_per_channel=0.7),
    "contrast": dict(contrast_range={"bg_contrast": [0.75, 1.25]}, preserve_range=True, synchronize_channels=True,
                     p_per_channel=0.7),
    "gamma": dict(gamma={"bg_contrast": [0.7, 1.5]}, p_invert_image=0.5, synchronize_channels=True,
                  p_per_channel=0.7, p_retain_stats=0.5),
}


@pytest.mark.parametrize("kind", list(SYNC_CONFIGS))
def test_synchronized_channels_parity(capi, kind):
    """synchronize_channels=True: one draw shared by the selected channels (bgv2 still stores one value per
    selected channel)."""
    rng = np.random.default_rng(80)
    image = make_image(rng, 4, (10, 12, 14))
    config = SYNC_CONFIGS[kind]
    t = build_bgv2(kind, config)
    for seed in (81, 82, 83):
        params = _params_with_some_channel(t, image, seed, "apply_to_channel")
        _check(capi, kind, config, params, image)


# ------------------------------------------------------------------------------------------------ degenerate channels

@pytest.mark.parametrize("cfg_name", ["gamma", "gamma_inverted", "contrast", "multiplicative_brightness"])
def test_constant_and_wide_range_channels(capi, cfg_name):
    """A constant (non-zero) channel — zero range and zero std hit bgv2's 1e-7 clamps — next to a channel with
    a huge dynamic range (CT-like values)."""
    rng = np.random.default_rng(70)
    image = make_image(rng, 3, (9, 10, 11))
    image[1] = 3.25
    image[2] = image[2] * 800.0 + 40.0
    kind, config, _ = NNUNET_CONFIGS[cfg_name]
    t = build_bgv2(kind, config)
    for seed in (71, 72):
        params = draw_bgv2_params(t, image, seed)
        out, ref = _check(capi, kind, config, params, image)
        np.testing.assert_allclose(out[1], ref[1], rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------------------------------------ gaussian noise

def _noise_request(config, params_json, image, capi):
    _, out = augmentd_apply(capi, "gaussian_noise", config, params_json, image=image)
    return out["image"]


@pytest.mark.parametrize("channels", CHANNELS)
def test_gaussian_noise_is_standard_normal_times_sigma(capi, channels):
    """σ semantics: (out − in)/σ ~ N(0,1) per applied channel (KS p > 0.01); bgv2 'noise_variance' is σ."""
    rng = np.random.default_rng(600 + channels)
    image = make_image(rng, channels, (24, 30, 28))
    kind, config, _ = NNUNET_CONFIGS["gaussian_noise"]
    t = build_bgv2(kind, config)
    params = draw_bgv2_params(t, image, 61)
    sigma = float(params["sigmas"])
    assert 0 < sigma < 0.1
    out = _noise_request(config, params_to_json(kind, params), image, capi)
    assert out.shape == image.shape and out.dtype == np.float32
    # bgv2 itself, as a sanity check of the statistic
    ref = apply_bgv2(t, params, image=image)["image"]
    for name, res in (("augmentd", out), ("bgv2", ref)):
        z = (res.astype(np.float64) - image) / sigma
        for c in range(channels):
            p = stats.kstest(z[c].ravel(), "norm").pvalue
            assert p > 0.01, f"{name}: channel {c} (out-in)/sigma not N(0,1): KS p={p:.3g}, " \
                             f"mean {z[c].mean():.4f} std {z[c].std():.4f}"


def test_gaussian_noise_channel_synchronisation(capi):
    """synchronize_channels=True: one σ for all channels, independent fields per channel;
    False: each channel its own σ; unselected channels untouched."""
    rng = np.random.default_rng(62)
    image = make_image(rng, 4, (20, 24, 26))
    n = image[0].size
    # synchronised: same sigma, fields uncorrelated between channels
    cfg = dict(noise_variance=[0, 0.1], p_per_channel=1, synchronize_channels=True)
    params = {"apply_mask": [True] * 4, "apply_idx": [0, 1, 2, 3], "num_apply": 4, "sigmas": 0.05}
    d = _noise_request(cfg, params, image, capi).astype(np.float64) - image
    stds = d.reshape(4, -1).std(1)
    np.testing.assert_allclose(stds, 0.05, rtol=5 * np.sqrt(0.5 / n))
    corr = np.corrcoef(d.reshape(4, -1))
    off = corr[~np.eye(4, dtype=bool)]
    assert np.all(np.abs(off) < 5 / np.sqrt(n)), f"noise fields correlated across channels: {corr}"
    # per-channel sigmas, channel 2 not selected
    cfg2 = dict(noise_variance=[0, 0.1], p_per_channel=0.7, synchronize_channels=False)
    params2 = {"apply_mask": [True, True, False, True], "apply_idx": [0, 1, 3], "num_apply": 3,
               "sigmas": [0.02, 0.08, 0.05]}
    out2 = _noise_request(cfg2, params2, image, capi)
    np.testing.assert_array_equal(out2[2], image[2])
    d2 = out2.astype(np.float64) - image
    for c, s in zip((0, 1, 3), (0.02, 0.08, 0.05)):
        z = d2[c].ravel() / s
        p = stats.kstest(z, "norm").pvalue
        assert p > 0.01, f"channel {c}: (out-in)/{s} not N(0,1), KS p={p:.3g}, std {z.std():.4f}"


def test_gaussian_noise_sigma_zero_is_identity(capi):
    """σ = 0 (the lower end of U(0, 0.1)) adds nothing: bgv2's normal_(std=0) is all zeros."""
    rng = np.random.default_rng(63)
    image = make_image(rng, 1, (8, 9, 10))
    cfg = dict(noise_variance=[0, 0.1], p_per_channel=1, synchronize_channels=True)
    out = _noise_request(cfg, {"apply_mask": [True], "apply_idx": [0], "num_apply": 1, "sigmas": 0.0}, image, capi)
    np.testing.assert_allclose(out, image, atol=0)
    assert np.isfinite(out).all()
