"""Parity of augmentd's entry-level region modes (``region_mode``, augment/region_mode.h) with AugLab 20260109's own
``in_seg`` / ``out_seg`` / ``mix_in_out`` (``_choose_region_mode`` + ``_apply_region_mode`` in the installed
``auglab`` package, GPL-3.0: a test dependency only, run on the CPU; install: see test_auglab_zscore_parity.py), for
five AugLab GPU transforms (RandomBrightnessGPU, RandomClampGPU, RandomConvTransformGPU "Scharr", RandomGammaGPU
and its invert_image form — DAExt's GammaTransform / InvGammaTransform) × the modes
in / out / all × mix_in_out off / on, with one label channel (m = the label value 0/1/2) and two 0/1 channels
(m = their sum). Parameters injected both ways: AugLab's region choice is forced (its ``_choose_region_mode``
replaced by one returning the mode under test) and its mix draws (``torch.randint(0, 2, (K,))`` per sample) are
replaced by fixed bits, which augmentd receives as the record's ``"region"``; the transforms' own ``torch.rand``
draws are recorded and injected as in the per-transform parity tests. Tolerance: 1e-5 of the reference channel's
range (torch's quantile / conv3d may run vectorised, CPU-dependent). A sanity check makes sure the region modes
changed the output against the plain transform (the test can fail).
"""
from __future__ import annotations

import numpy as np
import pytest

from augment_capi import require_auglab

torch = pytest.importorskip("torch")

SHAPE = (9, 10, 11)
N = 3


@pytest.fixture(scope="module")
def auglab():
    require_auglab()
    import auglab.transforms.gpu.contrast as m
    return m


def _auglab(module, cls, kw, batch, seg, mode, mix, keep, monkeypatch):
    """AugLab's output with the region mode forced and the mix bits fixed; the torch.rand values it drew."""
    drawn = []
    real_rand, real_randint = torch.rand, torch.randint
    keeps = iter(keep)

    def rand(*a, **k):
        v = real_rand(*a, **k)
        drawn.extend(float(x) for x in v.reshape(-1))
        return v

    def randint(lo, hi, size, **k):
        if (lo, hi) == (0, 2):  # _apply_region_mode's mix_in_out draw, one per sample
            return torch.tensor(next(keeps), dtype=k.get("dtype"), device=k.get("device"))
        return real_randint(lo, hi, size, **k)
    chosen = []

    def choose(p_in, p_out, seg_mask):
        chosen.append((p_in, p_out))
        return mode
    t = cls(p=1.0, same_on_batch=False, in_seg=0.5, out_seg=0.5, mix_in_out=mix, **kw)
    with monkeypatch.context() as m:
        m.setattr(torch, "rand", rand)
        m.setattr(torch, "randint", randint)
        m.setattr(module, "_choose_region_mode", choose)
        out = t.apply_transform(torch.from_numpy(batch.copy()), {"seg": torch.from_numpy(seg.astype(np.float32))}, {})
    assert chosen == [(0.5, 0.5)], "AugLab chooses one region per applied channel and call"
    return out.numpy(), drawn


def _brightness(module):
    lo, hi = 0.6, 1.7
    def params(u, b):
        f = float(np.float32(u[b]) * np.float32(hi - lo) + np.float32(lo))
        return {"apply_to_channel": [0], "multipliers": [f]}
    return (module.RandomBrightnessGPU, {"brightness_range": [lo, hi]}, 1, "multiplicative_brightness",
            {"multiplier_range": [lo, hi], "synchronize_channels": True, "p_per_channel": 1.0}, params)


def _clamp(module):
    a = 0.3
    def params(u, b):
        return {"apply_to_channel": [0], "min_percentile": [float(np.float32(u[2 * b]) * np.float32(a))],
                "max_percentile": [float(np.float32(1.0) - np.float32(u[2 * b + 1]) * np.float32(a))]}
    return (module.RandomClampGPU, {"max_clamp_amount": a, "apply_to_channel": [0]}, 2, "clamp",
            {"max_clamp_amount": a, "apply_to_channel": [0]}, params)


def _gamma(invert):
    def make(module):
        lo, hi = 0.7, 1.5
        def params(u, b):
            g = float(np.float32(u[b]) * np.float32(hi - lo) + np.float32(lo))
            return {"apply_to_channel": [0], "retain_stats": [False], "invert_image": [invert], "gamma": [g]}
        return (module.RandomGammaGPU, {"gamma_range": [lo, hi], "invert_image": invert}, 1, "gamma",
                {"gamma": [lo, hi], "p_invert_image": float(invert), "synchronize_channels": True,
                 "p_per_channel": 1.0, "p_retain_stats": 0.0}, params)
    return make


def _scharr(module):
    return (module.RandomConvTransformGPU, {"kernel_type": "Scharr", "absolute": True, "apply_to_channel": [0]}, 2,
            "edge_convolution", {"kernel_type": "scharr", "absolute": True, "apply_to_channel": [0],
                                 "retain_stats": False}, lambda u, b: None)


@pytest.mark.parametrize("make", [_brightness, _clamp, _scharr, _gamma(False), _gamma(True)],
                         ids=["brightness", "clamp", "scharr", "gamma", "inv_gamma"])
@pytest.mark.parametrize("mode", ["in", "out", "all"])
@pytest.mark.parametrize("mix", [False, True])
@pytest.mark.parametrize("seg_channels", [1, 2])
def test_region_modes_match_auglab(capi, auglab, monkeypatch, make, mode, mix, seg_channels):
    cls, kw, channels, kind, config, params_of = make(auglab)
    rng = np.random.default_rng(7 + seg_channels + 3 * mix)
    torch.manual_seed(5 + seg_channels + 3 * mix)  # AugLab's own draws (recorded and injected)
    batch = (rng.standard_normal((N, channels, *SHAPE)) ** 3 * 4 + rng.uniform(-3, 3)).astype(np.float32)
    if seg_channels == 1:
        seg = rng.integers(0, 3, (N, 1, *SHAPE)).astype(np.int16)   # nnU-Net label map: m = label value
    else:
        seg = rng.integers(0, 2, (N, 2, *SHAPE)).astype(np.int16)   # 0/1 channels: m = their sum
    keep = [[int(v) for v in rng.integers(0, 2, seg_channels)] for _ in range(N)]
    if seg_channels == 2:
        keep[0] = [1, 0]  # at least one partial keep
    ref, u = _auglab(auglab, cls, kw, batch, seg, mode, mix, keep, monkeypatch)
    inj = []
    for b in range(N):
        p = params_of(u, b)
        e = {"applied": True, "region": {"mode": mode, "keep": [bool(k) for k in keep[b]] if mix else
                                         [True] * seg_channels}}
        if p is not None:
            e["params"] = p
        inj.append([e])
    entry = {"kind": kind, "config": config, "region_mode": {"in_seg": 0.5, "out_seg": 0.5, "mix_in_out": mix}}
    res, t = capi.run({"op": "run_pipeline", "pipeline": {"transforms": [entry]}, "seed": 1, "first_sample_index": 0,
                       "params": inj}, image=batch, seg=seg)
    assert res["samples"][0]["transforms"][0]["region"]["mode"] == mode
    ours = t["image"]
    plain = capi.run({"op": "run_pipeline", "pipeline": {"transforms": [{"kind": kind, "config": config}]},
                      "seed": 1, "first_sample_index": 0,
                      "params": [[{k: v for k, v in e[0].items() if k != "region"}] for e in inj]},
                     image=batch, seg=seg)[1]["image"]
    for b in range(N):
        for c in range(channels):
            r = ref[b, c]
            if c != 0:
                np.testing.assert_array_equal(ours[b, c], batch[b, c])
                continue
            tol = 1e-5 * max(float(r.max() - r.min()), 1e-6)
            err = float(np.abs(ours[b, c].astype(np.float64) - r).max())
            assert err <= tol, f"{kind} {mode} mix={mix} sample {b}: max |err| {err:.3g} > {tol:.3g}"
        # "in" / "out" (a blend, or the input where mix_in_out dropped every channel) differ from the plain step
        differs = float(np.abs(ours[b, 0] - plain[b, 0]).max()) > 1e-3 * float(np.ptp(plain[b, 0]))
        assert differs == (mode != "all"), f"{kind} {mode} mix={mix} sample {b}: region mode ignored or misapplied"
