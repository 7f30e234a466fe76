"""Parity of augmentd's ``clamp`` with AugLab's own ``RandomClampGPU`` (the installed ``auglab`` package, GPL-3.0: a
test dependency only, run on the CPU; see test_auglab_zscore_parity.py for the install). AugLab draws its two
percentiles per (channel, sample) with ``torch.rand``; the test records those draws and injects them into augmentd
(``min_percentile`` / ``max_percentile``), so both clamp at the same quantiles. Tolerance: 1e-5 of each channel's
range: torch's quantile lerp may run vectorised with FMA (the bound then differs by an ulp, CPU-dependent) and
retain_stats uses torch's float32 mean/std against augmentd's double statistics. Untouched channels are identical.
"""
from __future__ import annotations

import numpy as np
import pytest

from augment_capi import require_auglab

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def auglab_clamp():
    require_auglab()
    from auglab.transforms.gpu.contrast import RandomClampGPU
    return RandomClampGPU


def _auglab_with_draws(cls, batch, monkeypatch, **kw):
    """AugLab's output and the torch.rand values its apply_transform drew, in call order."""
    drawn = []
    real = torch.rand

    def recording(*args, **kwargs):
        v = real(*args, **kwargs)
        drawn.append(v.clone())
        return v
    t = cls(p=1.0, same_on_batch=False, **kw)
    with monkeypatch.context() as m:
        m.setattr(torch, "rand", recording)
        out = t(torch.from_numpy(batch.copy())).numpy()
    return out, [float(d.reshape(-1)[0]) for d in drawn if d.numel() == 1]


@pytest.mark.parametrize("retain", [False, True])
@pytest.mark.parametrize("shape,channels,apply,amount", [((9, 11, 13), 1, [0], 0.2), ((6, 20, 17), 3, [0, 2], 0.35),
                                                         ((1, 16, 15), 2, [1], 0.5)])
def test_clamp_matches_auglab(capi, auglab_clamp, monkeypatch, shape, channels, apply, amount, retain):
    rng = np.random.default_rng(31 + channels)
    N = 3
    batch = (rng.standard_normal((N, channels, *shape)) ** 3 * rng.uniform(0.5, 40)).astype(np.float32)
    ref, u = _auglab_with_draws(auglab_clamp, batch, monkeypatch, max_clamp_amount=amount, apply_to_channel=apply,
                                retain_stats=retain)
    assert len(u) == 2 * N * len(apply), f"AugLab drew {len(u)} values"
    config = {"max_clamp_amount": amount, "apply_to_channel": apply, "retain_stats": retain}
    for b in range(N):
        # AugLab's order: for c in apply_to_channel: for i in samples: (min draw, max draw)
        lo = [float(np.float32(u[2 * (k * N + b)]) * np.float32(amount)) for k in range(len(apply))]
        hi = [float(np.float32(1.0) - np.float32(u[2 * (k * N + b) + 1]) * np.float32(amount)) for k in range(len(apply))]
        params = {"apply_to_channel": apply, "min_percentile": lo, "max_percentile": hi}
        _, t = capi.run({"op": "apply_transform", "transform": {"kind": "clamp", "config": config}, "params": params},
                        image=batch[b])
        ours = t["image"]
        for c in range(channels):
            if c not in apply:
                np.testing.assert_array_equal(ours[c], batch[b, c], err_msg=f"sample {b} channel {c}")
                continue
            r = ref[b, c]
            tol = 1e-5 * max(float(r.max() - r.min()), 1e-6)
            err = float(np.abs(ours[c].astype(np.float64) - r).max())
            assert err <= tol, f"sample {b} channel {c}: max |err| {err:.3g} > {tol:.3g}"
        if not retain:  # retain_stats rescales the clamped channel to the old std: it may exceed the old maximum
            assert (ours[apply[0]] <= batch[b, apply[0]].max()).all()


def test_clamp_draws_follow_the_configured_ranges(capi):
    """AugLab's sampler: q_lo = U·a, q_hi = 1 − U·a, independent (KS against U(0, 1) after rescaling)."""
    from scipy import stats
    params = capi.draw_params("clamp", {"max_clamp_amount": 0.25, "apply_to_channel": [0, 1]}, [2, 4, 4, 4], 5, 2000)
    lo = np.array([p["min_percentile"] for p in params]) / 0.25
    hi = (1 - np.array([p["max_percentile"] for p in params])) / 0.25
    for name, v in (("lo ch0", lo[:, 0]), ("lo ch1", lo[:, 1]), ("hi ch0", hi[:, 0]), ("hi ch1", hi[:, 1])):
        assert stats.kstest(v, "uniform").pvalue > 0.01, name
    assert abs(np.corrcoef(lo[:, 0], hi[:, 0])[0, 1]) < 0.08  # independent draws
