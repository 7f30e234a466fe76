"""Parity of augmentd's ``redistribute_seg`` with AugLab's own ``RandomRedistributeSegGPU`` (the installed ``auglab``
package, GPL-3.0: a test dependency only, run on the CPU; see test_auglab_zscore_parity.py for the install). AugLab
draws with ``torch.rand`` inside ``apply_transform`` (per channel, per sample with foreground: the in_seg coin, R
jitters, R amplitudes); the test records those draws and injects them into augmentd (``in_seg``, ``jitter`` = 0.2·U,
``amplitude`` = 2·U − 1), with the mask passed as AugLab's container passes it (``params["seg"]``). Tolerance: 1e-4
of each channel's range: AugLab reduces its region statistics in float32 (augmentd in double), and the Gaussian
bump's exp() amplifies the ulp-level difference of its centre by |z| (a few units). Untouched channels are identical.
"""
from __future__ import annotations

import numpy as np
import pytest

from augment_capi import require_auglab

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def auglab_redistribute():
    require_auglab()
    from auglab.transforms.gpu.fromSeg import RandomRedistributeSegGPU
    return RandomRedistributeSegGPU


def _auglab_with_draws(cls, batch, seg, monkeypatch, **kw):
    drawn = []
    real = torch.rand

    def recording(*args, **kwargs):
        v = real(*args, **kwargs)
        drawn.append(v.clone())
        return v
    t = cls(p=1.0, **kw)
    with monkeypatch.context() as m:
        m.setattr(torch, "rand", recording)
        out = t.apply_transform(torch.from_numpy(batch.copy()), {"seg": torch.from_numpy(seg.astype(np.float32))},
                                t.flags).numpy()
    return out, drawn


def _blob_seg(rng, n, r, shape):
    """Label maps with a few boxes (foreground in every sample unless told otherwise)."""
    seg = np.zeros((n, r, *shape), np.int16)
    for b in range(n):
        for k in range(r):
            for _ in range(2):
                lo = [int(rng.integers(0, s - 3)) for s in shape]
                sz = [int(rng.integers(2, max(3, s // 2))) for s in shape]
                seg[b, k, lo[0]:lo[0] + sz[0], lo[1]:lo[1] + sz[1], lo[2]:lo[2] + sz[2]] = int(rng.integers(1, 4))
    return seg


@pytest.mark.parametrize("retain", [False, True])
@pytest.mark.parametrize("in_seg", [0.0, 1.0, 0.5])
@pytest.mark.parametrize("shape,channels,regions,apply", [((12, 14, 10), 1, 1, [0]), ((9, 16, 11), 3, 2, [0, 2])])
def test_redistribute_matches_auglab(capi, auglab_redistribute, monkeypatch, shape, channels, regions, apply, in_seg,
                                     retain):
    rng = np.random.default_rng(17 + channels + int(10 * in_seg) + retain)
    n = 3
    batch = (rng.standard_normal((n, channels, *shape)) * rng.uniform(1, 50) + rng.uniform(-20, 20)).astype(np.float32)
    seg = _blob_seg(rng, n, regions, shape)
    batch[:, 0] += 3.0 * (seg[:, 0] > 0)  # regions brighter than their ring
    ref, drawn = _auglab_with_draws(auglab_redistribute, batch, seg, monkeypatch, in_seg=in_seg,
                                    apply_to_channel=apply, retain_stats=retain)
    assert len(drawn) == len(apply) * n * 3, f"AugLab drew {len(drawn)} tensors"
    draws = {}
    it = iter(drawn)
    for ch in apply:  # AugLab's loop: channels outer, samples inner
        for b in range(n):
            u, jit, amp = next(it), next(it), next(it)
            draws[(ch, b)] = (bool(float(u) <= in_seg), (jit * 0.2).tolist(), (2 * amp - 1).tolist())
    config = {"in_seg": in_seg, "apply_to_channel": apply, "retain_stats": retain}
    for b in range(n):
        params = {"apply_to_channel": apply, "in_seg": [draws[(c, b)][0] for c in apply],
                  "jitter": [draws[(c, b)][1] for c in apply], "amplitude": [draws[(c, b)][2] for c in apply]}
        _, t = capi.run({"op": "apply_transform", "transform": {"kind": "redistribute_seg", "config": config},
                         "params": params}, image=batch[b], seg=seg[b])
        ours = t["image"]
        for c in range(channels):
            if c not in apply:
                np.testing.assert_array_equal(ours[c], batch[b, c])
                continue
            r = ref[b, c]
            tol = 1e-4 * max(float(r.max() - r.min()), 1e-6)
            err = float(np.abs(ours[c].astype(np.float64) - r).max())
            assert err <= tol, f"sample {b} channel {c}: max |err| {err:.3g} > {tol:.3g}"
        assert not np.allclose(ref[b, apply[0]], batch[b, apply[0]])


def test_no_foreground_gives_the_normalised_channel_like_auglab(capi, auglab_redistribute, monkeypatch):
    rng = np.random.default_rng(3)
    batch = (rng.standard_normal((2, 1, 8, 9, 10)) * 7 + 2).astype(np.float32)
    seg = np.zeros((2, 1, 8, 9, 10), np.int16)
    ref, drawn = _auglab_with_draws(auglab_redistribute, batch, seg, monkeypatch, in_seg=0.2)
    assert not drawn
    for b in range(2):
        params = {"in_seg": [False], "jitter": [[0.0]], "amplitude": [[0.0]]}
        _, t = capi.run({"op": "apply_transform", "transform": {"kind": "redistribute_seg", "config": {}},
                         "params": params}, image=batch[b], seg=seg[b])
        np.testing.assert_allclose(t["image"][0], ref[b, 0], atol=1e-6)


def test_draws_follow_auglab_ranges(capi):
    """The in_seg coin U <= in_seg, jitter 0.2·U, amplitude 2·U − 1, one of each per seg channel (KS vs uniform)."""
    from scipy import stats
    params = capi.draw_params("redistribute_seg", {"in_seg": 0.3}, [1, 4, 4, 4], 10, 4000)
    coin = np.array([p["in_seg"][0] for p in params], float)
    jit = np.array([p["jitter"][0][0] for p in params]) / 0.2
    amp = (np.array([p["amplitude"][0][0] for p in params]) + 1) / 2
    assert abs(coin.mean() - 0.3) < 0.03
    assert stats.kstest(jit, "uniform").pvalue > 0.01
    assert stats.kstest(amp, "uniform").pvalue > 0.01
    assert abs(np.corrcoef(jit, amp)[0, 1]) < 0.08
