"""Every sampled parameter of augmentd (``draw_params``) against batchgeneratorsv2's own sampler.

bgv2 side: the transform wrapped in ``RandomTransform(t, p)`` exactly as nnU-Net builds it, numpy and torch seeded
once, then ``get_parameters`` called N times (the apply decision first, the inner parameters only when applied).
augmentd side: one ``draw_params`` request for N consecutive sample indices. Continuous parameters are compared
with a two-sample Kolmogorov–Smirnov test (p > 0.01); probabilities (apply decisions, per-channel picks, mirror
axes, rotation/scaling branches) with exact binomial tests against the configured probability (p > 0.01), and
joint discrete outcomes with chi-square tests. Seeds are fixed, so the suite is reproducible.

About false alarms: the module makes ~80 random checks at α = 0.01, so for a *correct* engine some seed will
eventually fail one check marginally (after a change of augmentd's stream layout, say). A real difference fails
with tiny p at any seed; a marginal one (1e-4 < p ≤ 0.01) is checked by re-running with another seed:
``AUGMENTD_DIST_SEED=<n> pytest tests/python/parity/test_distributions.py``.

Rotation angles and scales are not part of bgv2's params dict (only the ``affine``), so both sides are decoded
the same way: scale_i = ‖A[:, i]‖ (A = R·diag(s)), then Z-Y-X Euler angles of R = A·diag(1/s).
"""

from __future__ import annotations

import functools
import math
import os
from typing import Dict, List, Sequence, Tuple

import numpy as np
import pytest
import torch
from scipy import stats

from batchgeneratorsv2.transforms.utils.random import RandomTransform

from bgv2_ref import (NNUNET_CONFIGS, ROT_DUMMY_2D, build_bgv2, nnunet_spatial_config, params_to_json,
                      seed_all)

N = 10_000
ALPHA = 0.01
SEED_AUGMENTD = int(os.environ.get("AUGMENTD_DIST_SEED", "20261129"))
SEED_BGV2 = 12345
IMAGE_SHAPE_4CH = [4, 10, 11, 12]


# --------------------------------------------------------------------------------------------------------------
# Drawing
# --------------------------------------------------------------------------------------------------------------

def bgv2_draws(kind: str, config: dict, p: float, n: int, image_shape: Sequence[int], seed: int) -> List[dict]:
    t = build_bgv2(kind, config)
    wrapper = RandomTransform(t, p)
    seed_all(seed)
    img = torch.empty(tuple(image_shape))
    out = []
    with torch.no_grad():
        for _ in range(n):
            applied = bool(wrapper.get_parameters(image=img)["apply_transform"])
            d = params_to_json(kind, t.get_parameters(image=img)) if applied else {}
            d["applied"] = applied
            out.append(d)
    return out


def augmentd_draws(capi, kind: str, config: dict, p: float, n: int, image_shape: Sequence[int], seed: int,
                   first: int = 0) -> List[dict]:
    req = {"op": "draw_params", "transform": {"kind": kind, "config": config}, "apply_probability": p,
           "seed": seed, "first_sample_index": first, "count": n, "image_shape": list(image_shape)}
    j, _ = capi.run(req)
    assert isinstance(j, list), f"draw_params must return a JSON list, got {type(j).__name__}"
    assert len(j) == n, f"draw_params returned {len(j)} dicts for count={n}"
    for d in j[:5]:
        assert isinstance(d.get("applied"), bool), f"'applied' missing or not bool in {d}"
    return j


@functools.lru_cache(maxsize=None)
def _bgv2_cached(name: str, p: float, shape: Tuple[int, ...]):
    kind, config = CASES[name]
    return bgv2_draws(kind, config, p, N, shape, SEED_BGV2)


_AUG_CACHE: Dict[Tuple, List[dict]] = {}


def _draws(capi, name: str, p: float = 1.0, shape: Sequence[int] = tuple(IMAGE_SHAPE_4CH),
           bgv2_shape: Sequence[int] = None):
    """(augmentd draws, bgv2 draws) of case ``name``; ``bgv2_shape`` is the sample shape bgv2 sees when it
    differs (dummy-2D: the folded (C·X, Y, Z))."""
    kind, config = CASES[name]
    key = (name, p, tuple(shape))
    if key not in _AUG_CACHE:
        _AUG_CACHE[key] = augmentd_draws(capi, kind, config, p, N, shape, SEED_AUGMENTD)
    return _AUG_CACHE[key], _bgv2_cached(name, p, tuple(bgv2_shape or shape))


# --------------------------------------------------------------------------------------------------------------
# Statistics helpers
# --------------------------------------------------------------------------------------------------------------

def assert_ks(ours: Sequence[float], ref: Sequence[float], what: str) -> None:
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    assert len(ours) >= 1000 and len(ref) >= 1000, f"{what}: too few samples ({len(ours)}, {len(ref)})"
    res = stats.ks_2samp(ours, ref)
    assert res.pvalue > ALPHA, (f"{what}: KS p={res.pvalue:.3g} (D={res.statistic:.4f}); augmentd mean "
                                f"{ours.mean():.5f} sd {ours.std():.5f} [{ours.min():.4f}, {ours.max():.4f}], bgv2 "
                                f"mean {ref.mean():.5f} sd {ref.std():.5f} [{ref.min():.4f}, {ref.max():.4f}]")


def assert_binomial(k: int, n: int, p: float, what: str) -> None:
    if p in (0.0, 1.0):
        assert k == n * p, f"{what}: {k}/{n} but probability is {p}"
        return
    pv = stats.binomtest(int(k), int(n), p).pvalue
    assert pv > ALPHA, f"{what}: {k}/{n} = {k / n:.4f}, expected {p} (binomial p={pv:.3g})"


def assert_chisquare(counts: Sequence[int], probs: Sequence[float], what: str) -> None:
    counts = np.asarray(counts, np.float64)
    exp = np.asarray(probs, np.float64) * counts.sum()
    pv = stats.chisquare(counts, exp).pvalue
    assert pv > ALPHA, f"{what}: chi-square p={pv:.3g}, observed {counts.tolist()}, expected {exp.round(1).tolist()}"


def channel_mask(d: dict, key: str, c: int) -> List[bool]:
    """Per-channel selection as a bool list. bgv2's formats: a bool mask of length C for GaussianBlur
    ``apply_to_channel`` and GaussianNoise ``apply_mask``; a list of channel indices everywhere else."""
    v = d[key]
    if key in ("apply_mask",) or (key == "apply_to_channel" and "sigmas" in d and "apply_mask" not in d):
        assert isinstance(v, list) and len(v) == c and all(isinstance(x, bool) for x in v), \
            f"{key} must be a bool mask of length {c} (bgv2 format): {v}"
        return list(v)
    v = v or []
    assert all(isinstance(x, int) and not isinstance(x, bool) for x in v), f"{key} must be channel indices: {v}"
    assert v == sorted(set(v)) and all(0 <= x < c for x in v), f"{key}: {v}"
    return [i in set(v) for i in range(c)]


def applied_only(draws: List[dict]) -> List[dict]:
    return [d for d in draws if d["applied"]]


def decode_affine(a) -> Tuple[List[float], List[float]]:
    """(angles, scales) from bgv2's affine: 3D A = Rz(a2)·Ry(a1)·Rx(a0)·diag(s); 2D A = R(a)·diag(s)."""
    A = np.asarray(a, np.float64)
    s = np.linalg.norm(A, axis=0)
    R = A / s[None, :]
    if A.shape == (3, 3):
        a1 = math.asin(max(-1.0, min(1.0, -R[2, 0])))
        a0 = math.atan2(R[2, 1], R[2, 2])
        a2 = math.atan2(R[1, 0], R[0, 0])
        return [a0, a1, a2], s.tolist()
    assert A.shape == (2, 2)
    return [math.atan2(R[1, 0], R[0, 0])], s.tolist()


# --------------------------------------------------------------------------------------------------------------
# Configurations under test (nnU-Net's, plus the bgv2 options other nnU-Net trainers use)
# --------------------------------------------------------------------------------------------------------------

SPATIAL_PATCH = [6, 7, 8]  # small: bgv2 builds the grid on every draw
CASES: Dict[str, Tuple[str, dict]] = {name: (kind, cfg) for name, (kind, cfg, _) in NNUNET_CONFIGS.items()}
CASES.update({
    "spatial_nnunet": ("spatial", nnunet_spatial_config(SPATIAL_PATCH)),
    # dummy-2D: augmentd folds axis 0 itself (its ``dummy_2d`` flag); bgv2 sees the folded sample
    "spatial_dummy2d": ("spatial", nnunet_spatial_config(SPATIAL_PATCH[1:], rotation=ROT_DUMMY_2D, dummy_2d=True)),
    # DA5: p_rotation 0.4, p_rot_per_axis 0.5, per-axis scaling (0.7, 1.43)
    "spatial_da5": ("spatial", nnunet_spatial_config(SPATIAL_PATCH, p_rotation=0.4, p_rot_per_axis=0.5,
                                                     scaling=[0.7, 1.43], p_synchronize_scaling_across_axes=0)),
    "simulate_low_resolution_dummy2d": ("simulate_low_resolution",
                                        dict(NNUNET_CONFIGS["simulate_low_resolution"][1], ignore_axes=[0])),
    "simulate_low_resolution_da5": ("simulate_low_resolution",
                                    dict(scale=[0.3, 1], synchronize_channels=True, synchronize_axes=False,
                                         ignore_axes=[], allowed_channels=None, p_per_channel=0.5)),
    "gaussian_noise_per_channel": ("gaussian_noise", dict(noise_variance=[0, 0.1], p_per_channel=0.5,
                                                          synchronize_channels=False)),
    "gaussian_blur_da5": ("gaussian_blur", dict(blur_sigma=[0.3, 1.5], synchronize_channels=False,
                                                synchronize_axes=True, p_per_channel=0.5, benchmark=True)),
    "contrast_da5": ("contrast", dict(contrast_range={"bg_contrast": [0.5, 2.0]}, preserve_range=True,
                                      synchronize_channels=False, p_per_channel=0.5)),
    "gamma_mixed_flags": ("gamma", dict(gamma={"bg_contrast": [0.7, 1.5]}, p_invert_image=0.3,
                                        synchronize_channels=False, p_per_channel=0.6, p_retain_stats=0.7)),
})
C = IMAGE_SHAPE_4CH[0]


# --------------------------------------------------------------------------------------------------------------
# Apply decisions (RandomTransform wrappers of nnU-Net's pipeline)
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", [n for n, (_, _, p) in NNUNET_CONFIGS.items() if p < 1])
def test_apply_probability(capi, name):
    p = NNUNET_CONFIGS[name][2]
    ours, ref = _draws(capi, name, p)
    k = sum(d["applied"] for d in ours)
    assert_binomial(k, N, p, f"{name} applied (augmentd)")
    assert_binomial(sum(d["applied"] for d in ref), N, p, f"{name} applied (bgv2 sanity)")


def test_apply_probability_extremes(capi):
    for p in (0.0, 1.0):
        ours = augmentd_draws(capi, "gamma", CASES["gamma"][1], p, 500, IMAGE_SHAPE_4CH, 7)
        assert all(d["applied"] == (p == 1.0) for d in ours), f"apply_probability {p}"


# --------------------------------------------------------------------------------------------------------------
# Intensity transforms
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["gaussian_noise", "gaussian_noise_per_channel"])
def test_gaussian_noise_params(capi, name):
    ours, ref = _draws(capi, name)
    cfg = CASES[name][1]
    sig_o, sig_r = [], []
    picks = np.zeros(C, int)
    for d in ours:
        mask = channel_mask(d, "apply_mask", C)
        picks += mask
        assert d["apply_idx"] == [i for i in range(C) if mask[i]]
        assert d["num_apply"] == sum(mask)
        if d["num_apply"] == 0:
            assert d["sigmas"] is None
            continue
        if cfg["synchronize_channels"]:
            assert isinstance(d["sigmas"], (int, float)), f"synchronised sigmas must be one number: {d}"
            sig_o.append(d["sigmas"])
        else:
            assert len(d["sigmas"]) == d["num_apply"]
            sig_o += d["sigmas"]
    for d in ref:
        if d["num_apply"]:
            sig_r += [d["sigmas"]] if cfg["synchronize_channels"] else d["sigmas"]
    for c in range(C):
        assert_binomial(int(picks[c]), N, cfg["p_per_channel"], f"{name} channel {c} picked")
    assert_ks(sig_o, sig_r, f"{name} sigma")
    assert min(sig_o) >= 0 and max(sig_o) <= 0.1


@pytest.mark.parametrize("name", ["gaussian_blur", "gaussian_blur_da5"])
def test_gaussian_blur_params(capi, name):
    ours, ref = _draws(capi, name)
    cfg = CASES[name][1]
    picks = np.zeros(C, int)
    counts = np.zeros(C + 1, int)
    sig_o, sig_r, equal_axes = [], [], 0
    # with synchronize_axes the three entries of a channel are one draw: keep one (KS needs independent samples)
    per_channel = (lambda s: s[:1]) if cfg["synchronize_axes"] else (lambda s: s)
    for d in ours:
        mask = channel_mask(d, "apply_to_channel", C)
        picks += mask
        counts[sum(mask)] += 1
        assert len(d["sigmas"]) == sum(mask), f"one sigma list per selected channel: {d}"
        for s in d["sigmas"]:
            assert len(s) == 3
            equal_axes += len(set(s)) == 1
            sig_o += per_channel(s)
    for d in ref:
        for s in d["sigmas"]:
            sig_r += per_channel(s)
    for c in range(C):
        assert_binomial(int(picks[c]), N, cfg["p_per_channel"], f"{name} channel {c} picked")
    assert_chisquare(counts, stats.binom.pmf(range(C + 1), C, cfg["p_per_channel"]), f"{name} #channels")
    assert_ks(sig_o, sig_r, f"{name} sigma")
    n_lists = int(picks.sum())
    if cfg["synchronize_axes"]:
        assert equal_axes == n_lists, "synchronize_axes: one sigma for all axes of a channel"
    else:
        assert equal_axes == 0, "per-axis sigmas must be drawn independently"


@pytest.mark.parametrize("name", ["multiplicative_brightness", "contrast", "contrast_da5"])
def test_multiplier_params(capi, name):
    """BGContrast multipliers: mixture of U(lo, 1) and U(1, hi) with weight 1/2."""
    ours, ref = _draws(capi, name)
    kind, cfg = CASES[name]
    key = "multiplier_range" if kind == "multiplicative_brightness" else "contrast_range"
    lo, hi = cfg[key]["bg_contrast"]
    picks = np.zeros(C, int)
    m_o, m_r = [], []
    for d in ours:
        mask = channel_mask(d, "apply_to_channel", C)
        picks += mask
        ms = d["multipliers"] or []
        assert len(ms) == sum(mask)
        m_o += ms
    for d in ref:
        m_r += d["multipliers"] or []
    for c in range(C):
        assert_binomial(int(picks[c]), N, cfg["p_per_channel"], f"{name} channel {c} picked")
    assert_ks(m_o, m_r, f"{name} multiplier")
    m_o = np.asarray(m_o)
    assert m_o.min() >= lo and m_o.max() <= hi
    assert_binomial(int((m_o < 1).sum()), len(m_o), 0.5, f"{name} BGContrast branch (< 1)")
    # within each branch: uniform
    assert stats.kstest(m_o[m_o < 1], "uniform", args=(lo, 1 - lo)).pvalue > ALPHA
    assert stats.kstest(m_o[m_o >= 1], "uniform", args=(1, hi - 1)).pvalue > ALPHA


@pytest.mark.parametrize("name", ["simulate_low_resolution", "simulate_low_resolution_dummy2d",
                                  "simulate_low_resolution_da5"])
def test_low_resolution_params(capi, name):
    ours, ref = _draws(capi, name)
    cfg = CASES[name][1]
    ignore = cfg["ignore_axes"] or []
    picks = np.zeros(C, int)
    s_o, s_r = {a: [] for a in range(3)}, {a: [] for a in range(3)}
    for draws, acc, who in ((ours, s_o, "augmentd"), (ref, s_r, "bgv2")):
        for d in draws:
            mask = channel_mask(d, "apply_to_channel", C)
            if draws is ours:
                picks += mask
            assert len(d["scales"]) == sum(mask), f"{who}: one scale row per selected channel: {d}"
            # synchronize_channels: every selected channel repeats one draw; keep one row (independent samples)
            rows = d["scales"][:1] if cfg["synchronize_channels"] else d["scales"]
            for row in rows:
                assert len(row) == 3
                for a in range(3):
                    acc[a].append(row[a])
            if cfg["synchronize_channels"] and len(d["scales"]) > 1:
                assert all(r == d["scales"][0] for r in d["scales"]), f"{who}: channels not synchronised: {d}"
    for c in range(C):
        assert_binomial(int(picks[c]), N, cfg["p_per_channel"], f"{name} channel {c} picked")
    for a in range(3):
        if a in ignore:
            assert set(s_o[a]) == {1.0}, f"{name}: ignored axis {a} must have scale 1"
        else:
            assert_ks(s_o[a], s_r[a], f"{name} scale axis {a}")
    if cfg["synchronize_axes"]:
        free = [a for a in range(3) if a not in ignore]
        rows = list(zip(*[s_o[a] for a in free]))
        assert all(len(set(r)) == 1 for r in rows), f"{name}: synchronize_axes but axes differ"
    else:
        rows = list(zip(s_o[0], s_o[1], s_o[2]))
        assert sum(len(set(r)) == 1 for r in rows) == 0, f"{name}: per-axis scales must differ"


@pytest.mark.parametrize("name", ["gamma", "gamma_inverted", "gamma_mixed_flags"])
def test_gamma_params(capi, name):
    ours, ref = _draws(capi, name)
    cfg = CASES[name][1]
    picks = np.zeros(C, int)
    g_o, g_r, inv, ret, n_sel = [], [], 0, 0, 0
    for d in ours:
        mask = channel_mask(d, "apply_to_channel", C)
        picks += mask
        k = sum(mask)
        n_sel += k
        if k == 0:
            continue
        assert len(d["gamma"]) == len(d["invert_image"]) == len(d["retain_stats"]) == k
        g_o += d["gamma"]
        inv += sum(d["invert_image"])
        ret += sum(d["retain_stats"])
    for d in ref:
        g_r += d["gamma"] or []
    for c in range(C):
        assert_binomial(int(picks[c]), N, cfg["p_per_channel"], f"{name} channel {c} picked")
    assert_binomial(inv, n_sel, cfg["p_invert_image"], f"{name} invert_image")
    assert_binomial(ret, n_sel, cfg["p_retain_stats"], f"{name} retain_stats")
    assert_ks(g_o, g_r, f"{name} gamma")
    g = np.asarray(g_o)
    assert_binomial(int((g < 1).sum()), len(g), 0.5, f"{name} BGContrast branch (< 1)")


# --------------------------------------------------------------------------------------------------------------
# Mirror
# --------------------------------------------------------------------------------------------------------------

def test_mirror_axes(capi):
    ours, ref = _draws(capi, "mirror")
    combos = np.zeros(8, int)
    per_axis = np.zeros(3, int)
    for d in ours:
        axes = d["axes"]
        assert axes == sorted(set(axes)) and set(axes) <= {0, 1, 2}, f"axes {axes}"
        combos[sum(1 << a for a in axes)] += 1
        for a in axes:
            per_axis[a] += 1
    for a in range(3):
        assert_binomial(int(per_axis[a]), N, 0.5, f"mirror axis {a}")
    assert_chisquare(combos, [1 / 8] * 8, "mirror axis combinations (independence)")
    ref_combos = np.zeros(8, int)
    for d in ref:
        ref_combos[sum(1 << a for a in d["axes"])] += 1
    pv = stats.chi2_contingency(np.stack([combos, ref_combos])).pvalue
    assert pv > ALPHA, f"mirror combos differ from bgv2: {combos} vs {ref_combos} (p={pv:.3g})"


def test_mirror_restricted_axes(capi):
    cfg = {"allowed_axes": [0, 1]}
    ours = augmentd_draws(capi, "mirror", cfg, 1.0, 2000, IMAGE_SHAPE_4CH, 3)
    assert all(set(d["axes"]) <= {0, 1} for d in ours)
    assert_binomial(sum(0 in d["axes"] for d in ours), 2000, 0.5, "mirror axis 0 of (0, 1)")


# --------------------------------------------------------------------------------------------------------------
# Spatial
# --------------------------------------------------------------------------------------------------------------

def _decode_spatial(draws: List[dict], dim: int):
    rot, scl, none = [], [], 0
    angles, scales = [], []
    for d in draws:
        a = d["affine"]
        if a is None:
            none += 1
            rot.append(False)
            scl.append(False)
            continue
        ang, s = decode_affine(a)
        assert len(s) == dim
        r = any(abs(x) > 1e-12 for x in ang)
        sc = any(abs(x - 1) > 1e-12 for x in s)
        rot.append(r)
        scl.append(sc)
        if r:
            angles.append(ang)
        if sc:
            scales.append(s)
    return np.array(rot), np.array(scl), none, angles, scales


@pytest.mark.parametrize("name", ["spatial_nnunet", "spatial_dummy2d", "spatial_da5"])
def test_spatial_params(capi, name):
    cfg = CASES[name][1]
    dim = len(cfg["patch_size"])
    shape = [2, 9, 10, 11]
    bgv2_shape = shape if dim == 3 else [2 * 9, 10, 11]  # dummy-2D: bgv2 sees (C·X, Y, Z)
    ours, ref = _draws(capi, name, 1.0, tuple(shape), tuple(bgv2_shape))
    for d in ours[:50]:
        assert d.get("elastic_offsets") is None
        np.testing.assert_allclose(d["center_location_in_pixels"], [s / 2 for s in bgv2_shape[1:]])
    rot_o, scl_o, none_o, ang_o, s_o = _decode_spatial(ours, dim)
    rot_r, scl_r, none_r, ang_r, s_r = _decode_spatial(ref, dim)
    # P(some angle non-zero): bgv2 draws one angle per axis, zeroes each with 1 − p_rot_per_axis; 2D uses the last
    q = cfg.get("p_rot_per_axis", 1)
    p_rot_any = cfg["p_rotation"] * ((1 - (1 - q) ** 3) if dim == 3 else q)
    assert_binomial(int(rot_o.sum()), N, p_rot_any, f"{name} rotation drawn")
    assert_binomial(int(scl_o.sum()), N, cfg["p_scaling"], f"{name} scaling drawn")
    table = np.array([[np.sum(~rot_o & ~scl_o), np.sum(~rot_o & scl_o)],
                      [np.sum(rot_o & ~scl_o), np.sum(rot_o & scl_o)]])
    assert_chisquare(table.ravel(), [(1 - p_rot_any) * (1 - cfg["p_scaling"]), (1 - p_rot_any) * cfg["p_scaling"],
                                     p_rot_any * (1 - cfg["p_scaling"]), p_rot_any * cfg["p_scaling"]],
                     f"{name} rotation × scaling independence")
    p_none = (1 - cfg["p_rotation"]) * (1 - cfg["p_scaling"])
    assert_binomial(none_o, N, p_none, f"{name} affine null (integer-crop shortcut)")
    if q == 1:
        assert none_o == table[0, 0], "affine must be null exactly when nothing is drawn (integer-crop shortcut)"
    ang_o, ang_r = np.asarray(ang_o), np.asarray(ang_r)
    for a in range(ang_o.shape[1]):
        assert_ks(ang_o[:, a], ang_r[:, a], f"{name} rotation angle axis {a}")
    lo, hi = cfg["rotation"]
    assert ang_o.min() >= lo - 1e-9 and ang_o.max() <= hi + 1e-9
    if cfg.get("p_rot_per_axis", 1) < 1:
        zero_o = (np.abs(ang_o) < 1e-12).mean(0)
        zero_r = (np.abs(ang_r) < 1e-12).mean(0)
        np.testing.assert_allclose(zero_o, zero_r, atol=0.04, err_msg=f"{name}: per-axis rotation zeroing")
    s_o, s_r = np.asarray(s_o), np.asarray(s_r)
    for a in range(dim):
        assert_ks(s_o[:, a], s_r[:, a], f"{name} scale axis {a}")
    if cfg["p_synchronize_scaling_across_axes"] == 1:
        assert np.allclose(s_o, s_o[:, :1]), f"{name}: isotropic scaling expected"
    else:
        assert not np.allclose(s_o, s_o[:, :1])
    lo, hi = cfg["scaling"]
    assert s_o.min() >= lo - 1e-9 and s_o.max() <= hi + 1e-9


# --------------------------------------------------------------------------------------------------------------
# The RNG contract: a sample's parameters depend only on (seed, sample index, transform)
# --------------------------------------------------------------------------------------------------------------

def test_draw_params_independent_of_batching(capi):
    kind, cfg = CASES["gaussian_blur"]
    whole = augmentd_draws(capi, kind, cfg, 0.2, 300, IMAGE_SHAPE_4CH, 99, first=0)
    part = augmentd_draws(capi, kind, cfg, 0.2, 100, IMAGE_SHAPE_4CH, 99, first=150)
    assert part == whole[150:250]
    again = augmentd_draws(capi, kind, cfg, 0.2, 300, IMAGE_SHAPE_4CH, 99, first=0)
    assert again == whole
    other = augmentd_draws(capi, kind, cfg, 0.2, 300, IMAGE_SHAPE_4CH, 100, first=0)
    assert other != whole, "a different seed must give different parameters"


# --------------------------------------------------------------------------------------------------------------
# Elastic deformation (bgv2 SpatialTransform option; not used by nnU-Net's default trainer)
# --------------------------------------------------------------------------------------------------------------

N_ELASTIC = 1000  # each draw carries a whole (*patch, 3) offset field through JSON


def _elastic_stats(draws: List[dict]) -> Dict[str, List[float]]:
    """Per sample and axis d: max |offset_d| (= the drawn magnitude) and the circular lag-1 autocorrelation of
    offset_d along each spatial axis (a function of the drawn smoothing σ_d = scale_d · patch_d)."""
    out: Dict[str, List[float]] = {}
    for d in draws:
        off = np.asarray(d["elastic_offsets"], np.float64)  # (*patch, 3)
        for ax in range(3):
            f = off[..., ax]
            out.setdefault(f"magnitude axis {ax}", []).append(float(np.abs(f).max()))
            for sp in range(3):
                g = f - f.mean()
                r = float((g * np.roll(g, 1, axis=sp)).sum() / max((g * g).sum(), 1e-30))
                out.setdefault(f"lag-1 autocorrelation of offset {ax} along axis {sp}", []).append(r)
    return out


def test_elastic_deformation_params(capi):
    cfg = nnunet_spatial_config([6, 7, 8], p_rotation=0.0, p_scaling=0.0, p_elastic_deform=1.0,
                                elastic_deform_scale=[0.0, 0.2], elastic_deform_magnitude=[0.0, 0.2],
                                p_synchronize_def_scale_across_axes=0.5)
    shape = [1, 9, 10, 11]
    req = {"op": "draw_params", "transform": {"kind": "spatial", "config": cfg}, "apply_probability": 1.0,
           "seed": SEED_AUGMENTD, "first_sample_index": 0, "count": N_ELASTIC, "image_shape": shape}
    ours, _ = capi.run(req)
    ref = bgv2_draws("spatial", cfg, 1.0, N_ELASTIC, shape, SEED_BGV2)
    assert all(np.asarray(d["elastic_offsets"]).shape == (6, 7, 8, 3) for d in ours[:20])
    so, sr = _elastic_stats(ours), _elastic_stats(ref)
    for k in so:
        res = stats.ks_2samp(so[k], sr[k])
        assert res.pvalue > ALPHA, f"elastic {k}: KS p={res.pvalue:.3g} (augmentd mean {np.mean(so[k]):.4f}, " \
                                   f"bgv2 mean {np.mean(sr[k]):.4f})"


# --------------------------------------------------------------------------------------------------------------
# BGContrast edge ranges (bgv2 semantics, quirks included)
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("rng_", [[1.0, 1.5], [1.2, 1.6], [0.5, 0.9]], ids=str)
def test_bgcontrast_edge_ranges(capi, rng_):
    """lo ≥ 1: always U(max(lo, 1), hi). hi < 1: bgv2 still draws U(lo, 1) half of the time and U(1, hi) — i.e.
    values in (hi, 1] — otherwise, so the result leaves [lo, hi]; augmentd must sample the same distribution."""
    cfg = dict(multiplier_range={"bg_contrast": rng_}, synchronize_channels=False, p_per_channel=1)
    ours = augmentd_draws(capi, "multiplicative_brightness", cfg, 1.0, N, [1, 4, 4, 4], SEED_AUGMENTD)
    ref = bgv2_draws("multiplicative_brightness", cfg, 1.0, N, [1, 4, 4, 4], SEED_BGV2)
    m_o = [d["multipliers"][0] for d in ours]
    m_r = [d["multipliers"][0] for d in ref]
    assert_ks(m_o, m_r, f"BGContrast({rng_})")
