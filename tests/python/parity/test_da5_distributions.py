"""Every sampled parameter of augmentd's nnUNetTrainerDA5 transforms (``draw_params``) against bgv2's own sampler.

Same method as ``test_distributions.py`` (whose helpers are reused): the bgv2 transform wrapped in
``RandomTransform(t, p)`` as nnU-Net builds it, numpy and torch seeded once, ``get_parameters`` called N times;
augmentd: one ``draw_params`` request for N consecutive samples. Continuous parameters: two-sample KS (p > 0.01);
probabilities: binomial tests; discrete outcomes: chi-square against the exact distribution. DA5's callables
(the kernel scale, the gradient strength, the local gamma) are also compared with nnU-Net's own functions.
"""

from __future__ import annotations

import functools
from typing import Dict, List, Tuple

import numpy as np
import pytest
from scipy import stats

from test_distributions import (ALPHA, SEED_AUGMENTD, SEED_BGV2, applied_only, assert_binomial, assert_chisquare,
                                assert_ks, augmentd_draws, bgv2_draws)
from test_da5_parity import DA5_LOCAL_GAMMA, DA5_SCALE, DA5_STRENGTH, _nnunet_da5

N = 6000
SHAPE = [3, 20, 24, 30]  # C, X, Y, Z
C = SHAPE[0]

CASES: Dict[str, Tuple[str, dict, float]] = {
    "blank_rectangle": ("blank_rectangle", dict(rectangle_size=[[max(1, p // 10), p // 3] for p in SHAPE[1:]],
                                                rectangle_value="mean", num_rectangles=[1, 5], force_square=False,
                                                p_per_channel=0.5), 0.4),
    "brightness_additive": ("brightness_additive", dict(mu=0, sigma=0.5, synchronize_channels=False,
                                                        p_per_channel=0.5), 0.1),
    "brightness_additive_sync": ("brightness_additive", dict(mu=0.1, sigma=0.4, synchronize_channels=True,
                                                             p_per_channel=0.7), 1.0),
    "sharpening": ("sharpening", dict(strength=[0.1, 1], p_same_for_each_channel=0, p_per_channel=0.5), 0.2),
    "sharpening_same_clamp": ("sharpening", dict(strength=[0.5, 2.0], p_same_for_each_channel=0.4,
                                                 p_per_channel=1.0, p_clamp_intensities=0.3), 1.0),
    "median_filter": ("median_filter", dict(filter_size=[2, 8], p_same_for_each_channel=0, p_per_channel=0.5), 0.2),
    "median_filter_same": ("median_filter", dict(filter_size=[2, 8], p_same_for_each_channel=0.5,
                                                 p_per_channel=1.0), 1.0),
    "local_gamma": ("local_gamma", dict(scale=DA5_SCALE, loc=[-0.5, 1.5], gamma=DA5_LOCAL_GAMMA,
                                        same_for_all_channels=False, p_per_channel=0.5), 1.0),
    "brightness_gradient_additive": ("brightness_gradient_additive",
                                     dict(scale=DA5_SCALE, loc=[-0.5, 1.5], max_strength=DA5_STRENGTH,
                                          mean_centered=False, same_for_all_channels=False, p_per_channel=0.5), 1.0),
    # wrapper p = 1 (all N draws count); DA5's 0.5 is checked by test_da5_parity's pipeline frequency test
    "rot90": ("rot90", dict(num_axis_combinations=1, num_rot_per_combination=[0, 1, 2, 3], allowed_axes=[0, 1, 2]),
              1.0),
    "transpose_axes": ("transpose_axes", dict(allowed_axes=[0, 1, 2]), 1.0),
    "rician_noise": ("rician_noise", dict(noise_variance=[0.0, 0.1]), 0.3),
}
CUBE = [2, 9, 9, 9]  # rot90 / transpose need equal axes
SMALL = [2, 12, 12, 14]  # local transforms: bgv2 builds dense kernels on every draw (wrapper p = 1 for more draws;
# DA5's 0.3 is checked by the pipeline frequency test in test_da5_parity.py)
N_LOCAL = 3000


def _shape(name):
    return CUBE if name in ("rot90", "transpose_axes") else SMALL if name in (
        "local_gamma", "brightness_gradient_additive") else SHAPE


def _n(name):
    return N_LOCAL if name in ("local_gamma", "brightness_gradient_additive") else N


@functools.lru_cache(maxsize=None)
def _bgv2(name):
    kind, cfg, p = CASES[name]
    return bgv2_draws(kind, cfg, p, _n(name), _shape(name), SEED_BGV2)


_AUG: Dict[str, List[dict]] = {}


def _draws(capi, name):
    kind, cfg, p = CASES[name]
    if name not in _AUG:
        _AUG[name] = augmentd_draws(capi, kind, cfg, p, _n(name), _shape(name), SEED_AUGMENTD)
    return _AUG[name], _bgv2(name)


@pytest.mark.parametrize("name", [n for n, (_, _, p) in CASES.items() if p < 1])
def test_da5_apply_probability(capi, name):
    p = CASES[name][2]
    ours, ref = _draws(capi, name)
    assert_binomial(sum(d["applied"] for d in ours), _n(name), p, f"{name} applied")
    assert_binomial(sum(d["applied"] for d in ref), _n(name), p, f"{name} applied (bgv2 sanity)")


def test_blank_rectangle_params(capi):
    ours, ref = _draws(capi, "blank_rectangle")
    cfg = CASES["blank_rectangle"][1]
    ours, ref = applied_only(ours), applied_only(ref)
    picks = np.zeros(C, int)
    counts = np.zeros(5, int)
    sizes_o = [[] for _ in range(3)]
    sizes_r = [[] for _ in range(3)]
    lb_o = [[] for _ in range(3)]
    lb_r = [[] for _ in range(3)]
    for d in ours:
        assert len(d["apply_channel"]) == C and len(d["rectangles"]) == C
        for c in range(C):
            picks[c] += d["apply_channel"][c]
            if not d["apply_channel"][c]:
                assert d["rectangles"][c] == []
                continue
            counts[len(d["rectangles"][c])] += 1
            for lb, ub in d["rectangles"][c]:
                for a in range(3):
                    sizes_o[a].append(ub[a] - lb[a])
                    lb_o[a].append(lb[a])
                    assert 0 <= lb[a] and ub[a] <= SHAPE[1 + a]
    for d in ref:
        for c in range(C):
            for lb, ub in d["rectangles"][c]:
                for a in range(3):
                    sizes_r[a].append(ub[a] - lb[a])
                    lb_r[a].append(lb[a])
    for c in range(C):
        assert_binomial(int(picks[c]), len(ours), 0.5, f"blank_rectangle channel {c} picked")
    assert counts[0] == 0
    assert_chisquare(counts[1:], [0.25] * 4, "blank_rectangle #rectangles (randint(1, 5))")
    for a in range(3):
        lo, hi = cfg["rectangle_size"][a]
        hist = np.bincount(sizes_o[a], minlength=hi)[lo:hi]
        assert_chisquare(hist, [1 / (hi - lo)] * (hi - lo), f"blank_rectangle size axis {a}")
        assert_ks(lb_o[a], lb_r[a], f"blank_rectangle lower corner axis {a}")


@pytest.mark.parametrize("name", ["brightness_additive", "brightness_additive_sync"])
def test_brightness_additive_params(capi, name):
    ours, ref = _draws(capi, name)
    cfg = CASES[name][1]
    ours, ref = applied_only(ours), applied_only(ref)
    picks = np.zeros(C, int)
    sh_o, sh_r = [], []
    for d in ours:
        for c in d["apply_to_channel"]:
            picks[c] += 1
        if not d["apply_to_channel"]:
            assert d["shift"] is None
            continue
        assert len(d["shift"]) == C
        if cfg["synchronize_channels"]:
            assert len(set(d["shift"])) == 1
            sh_o.append(d["shift"][0])
        else:
            sh_o += d["shift"]
    for d in ref:
        if d["shift"] is not None:
            sh_r += [d["shift"][0]] if cfg["synchronize_channels"] else d["shift"]
    for c in range(C):
        assert_binomial(int(picks[c]), len(ours), cfg["p_per_channel"], f"{name} channel {c} picked")
    assert_ks(sh_o, sh_r, f"{name} shift")
    if not cfg["synchronize_channels"]:
        assert stats.kstest(sh_o, "norm", args=(cfg["mu"], cfg["sigma"])).pvalue > ALPHA


@pytest.mark.parametrize("name", ["sharpening", "sharpening_same_clamp"])
def test_sharpening_params(capi, name):
    ours, ref = _draws(capi, name)
    cfg = CASES[name][1]
    ours, ref = applied_only(ours), applied_only(ref)
    same = sum(len(set(d["strengths"])) == 1 for d in ours)
    assert_binomial(same, len(ours), cfg["p_same_for_each_channel"], f"{name} same strength for all channels")
    s_o = [d["strengths"][0] for d in ours]
    s_r = [d["strengths"][0] for d in ref]
    assert_ks(s_o, s_r, f"{name} strength")
    for key, p in (("apply_channel", cfg["p_per_channel"]), ("clamp_intensities", cfg.get("p_clamp_intensities", 0))):
        for c in range(C):
            assert_binomial(sum(bool(d[key][c]) for d in ours), len(ours), p, f"{name} {key}[{c}]")


@pytest.mark.parametrize("name", ["median_filter", "median_filter_same"])
def test_median_filter_params(capi, name):
    ours, ref = _draws(capi, name)
    cfg = CASES[name][1]
    ours = applied_only(ours)
    sizes = [k for d in ours for k in d["filter_sizes"]]
    hist = np.bincount(sizes, minlength=8)[2:8]
    assert sum(hist) == len(sizes)
    assert_chisquare(hist, [1 / 6] * 6, f"{name} filter size (randint(2, 8))")
    same = sum(len(set(d["filter_sizes"])) == 1 for d in ours)
    p_same = cfg["p_same_for_each_channel"] + (1 - cfg["p_same_for_each_channel"]) / 36  # 3 channels agreeing
    assert_binomial(same, len(ours), p_same, f"{name} equal sizes")
    for c in range(C):
        assert_binomial(sum(d["apply_channel"][c] for d in ours), len(ours), cfg["p_per_channel"], f"{name} ch {c}")
    ref_sizes = [k for d in applied_only(ref) for k in d["filter_sizes"]]
    assert_ks(sizes, ref_sizes, f"{name} filter size vs bgv2")


def _nnunet_samples(fn, n, *args):
    np.random.seed(4321)
    return [float(fn(*args)) for _ in range(n)]


def test_local_gamma_params(capi):
    ours, ref = _draws(capi, "local_gamma")
    ours, ref = applied_only(ours), applied_only(ref)
    m = _nnunet_da5()
    g_o = [g for d in ours for g in d["gammas"] if g is not None]
    g_r = [g for d in ref for g in d["gammas"] if g is not None]
    assert_ks(g_o, g_r, "local_gamma gamma vs bgv2")
    assert_ks(g_o, _nnunet_samples(m._local_gamma_gamma, 5000), "local_gamma gamma vs nnU-Net's _local_gamma_gamma")
    for c in range(SMALL[0]):
        assert_binomial(sum(d["gammas"][c] is not None for d in ours), len(ours), 0.5, f"local_gamma ch {c}")
        assert all((d["gammas"][c] is None) == (d["kernel_params"][c] is None) for d in ours)
    shape = SMALL[1:]
    for a in range(3):
        sc = [d["kernel_params"][c]["scale"][a] for d in ours for c in range(SMALL[0]) if d["kernel_params"][c]]
        lc = [d["kernel_params"][c]["loc"][a] / shape[a] for d in ours for c in range(SMALL[0])
              if d["kernel_params"][c]]
        ref_sc = _nnunet_samples(m._brightnessadditive_localgamma_transform_scale, 5000, shape, a)
        assert_ks(sc, ref_sc, f"local_gamma scale axis {a} vs nnU-Net's scale function")
        assert stats.kstest(lc, "uniform", args=(-0.5, 2.0)).pvalue > ALPHA, f"loc axis {a}"


def test_brightness_gradient_additive_params(capi):
    """Strengths from bgv2's dense kernels (the peak value, mean_centered=False) against augmentd's reported ones,
    and against nnU-Net's _brightness_gradient_additive_max_strength."""
    ours, ref = _draws(capi, "brightness_gradient_additive")
    ours, ref = applied_only(ours), applied_only(ref)
    m = _nnunet_da5()
    s_o = [kp["strength"] for d in ours for kp in d["kernel_params"] if kp is not None]
    s_r = []
    for d in ref:
        for k in d["kernels"]:
            if k is not None:
                k = np.asarray(k, np.float32)
                s_r.append(float(k.flat[np.argmax(np.abs(k))]))
    assert_ks(s_o, s_r, "gradient strength vs bgv2 kernels")
    assert_ks(s_o, _nnunet_samples(m._brightness_gradient_additive_max_strength, 5000, None, None),
              "gradient strength vs nnU-Net's function")
    for c in range(SMALL[0]):
        assert_binomial(sum(d["kernel_params"][c] is not None for d in ours), len(ours), 0.5, f"gradient ch {c}")
    for a in range(3):
        sc = [kp["scale"][a] for d in ours for kp in d["kernel_params"] if kp]
        ref_sc = _nnunet_samples(m._brightnessadditive_localgamma_transform_scale, 5000, SMALL[1:], a)
        assert_ks(sc, ref_sc, f"gradient scale axis {a} vs nnU-Net")


def test_rot90_params(capi):
    ours, ref = _draws(capi, "rot90")
    for draws, who in ((applied_only(ours), "augmentd"), (applied_only(ref), "bgv2")):
        counts = np.zeros((4, 3), int)
        for d in draws:
            assert len(d["num_rot_per_combination"]) == 1 and len(d["axis_combinations"]) == 1
            a, b = d["axis_combinations"][0]
            assert 1 <= a < b <= 3
            counts[d["num_rot_per_combination"][0], a + b - 3] += 1
        assert_chisquare(counts.ravel(), [1 / 12] * 12, f"rot90 (k, axes) joint ({who})")


def test_transpose_axes_params(capi):
    import itertools
    ours, ref = _draws(capi, "transpose_axes")
    perms = [list((0,) + p) for p in itertools.permutations((1, 2, 3))]
    for draws, who in ((applied_only(ours), "augmentd"), (applied_only(ref), "bgv2")):
        counts = [sum(d["axis_order"] == p for d in draws) for p in perms]
        assert sum(counts) == len(draws)
        assert_chisquare(counts, [1 / 6] * 6, f"transpose permutation ({who})")


def test_rician_noise_params(capi):
    ours, ref = _draws(capi, "rician_noise")
    v_o = [d["variance"] for d in applied_only(ours)]
    v_r = [d["variance"] for d in applied_only(ref)]
    assert_ks(v_o, v_r, "rician variance")
    assert min(v_o) >= 0 and max(v_o) <= 0.1
    keys = {(d["noise_key"]["sample_index"]) for d in applied_only(ours)}
    assert len(keys) == len(v_o), "every sample has its own noise field key"
