"""augmentd's MRI artefact parameter draws (``draw_params``, Philox) against TorchIO's own samplers (torch RNG).

The draws cannot be aligned sample by sample, so the distributions are compared: continuous parameters with a
two-sample Kolmogorov–Smirnov test (p > 1e-3 with N = 1500 per side), integer / categorical parameters with a
chi-square test on their counts, and every value must lie in TorchIO's range. TorchIO's samplers are called
exactly as its Random* transforms call them (``get_params`` with the parsed ranges).
Skips cleanly when torchio is missing.
"""

from __future__ import annotations

import numpy as np
import pytest

tio = pytest.importorskip("torchio")
torch = pytest.importorskip("torch")
stats = pytest.importorskip("scipy.stats")

N = 1500
P_MIN = 1e-3


def _draw(capi, kind, config, shape=(1, 16, 16, 16), n=N, seed=123):
    return capi.draw_params(kind, config, shape, seed, n)


def _ks(a, b, what):
    p = stats.ks_2samp(np.asarray(a, np.float64), np.asarray(b, np.float64)).pvalue
    assert p > P_MIN, f"{what}: KS p = {p:.2e}"


def _chi2(a, b, values, what):
    ca = np.array([np.sum(np.asarray(a) == v) for v in values], np.float64)
    cb = np.array([np.sum(np.asarray(b) == v) for v in values], np.float64)
    assert ca.sum() == len(a) and cb.sum() == len(b), f"{what}: value outside {values}"
    table = np.stack([ca, cb])
    table = table[:, table.sum(axis=0) > 0]
    p = stats.chi2_contingency(table).pvalue
    assert p > P_MIN, f"{what}: chi2 p = {p:.2e}"


def test_bias_field_coefficients(capi):
    ours = _draw(capi, "bias_field", {"coefficients": [-0.2, 0.7], "order": 2})
    t = tio.RandomBiasField(coefficients=(-0.2, 0.7), order=2)
    torch.manual_seed(0)
    theirs = [t.get_params(2, t.coefficients_range) for _ in range(N)]
    assert all(len(p["coefficients"]) == 10 for p in ours)
    a = np.array([p["coefficients"] for p in ours])
    b = np.array(theirs)
    assert a.min() >= -0.2 and a.max() < 0.7
    for k in (0, 5, 9):
        _ks(a[:, k], b[:, k], f"coefficient {k}")


def test_ghosting_params(capi):
    cfg = {"num_ghosts": [2, 6], "axes": [0, 2], "intensity": [0.3, 0.9], "restore": 0.4}
    ours = _draw(capi, "ghosting", cfg)
    t = tio.RandomGhosting(num_ghosts=(2, 6), axes=(0, 2), intensity=(0.3, 0.9), restore=0.4)
    torch.manual_seed(1)
    theirs = [t.get_params((2, 6), (0, 2), t.intensity_range, t.restore) for _ in range(N)]
    _chi2([p["num_ghosts"] for p in ours], [p[0] for p in theirs], range(2, 7), "num_ghosts")
    _chi2([p["axis"] for p in ours], [int(p[1]) for p in theirs], (0, 2), "axis")
    _ks([p["intensity"] for p in ours], [p[2] for p in theirs], "intensity")
    _ks([p["restore"] for p in ours], [p[3] for p in theirs], "restore")


def test_spike_params(capi):
    ours = _draw(capi, "spike", {"num_spikes": [0, 3], "intensity": 2.5})
    t = tio.RandomSpike(num_spikes=(0, 3), intensity=2.5)
    torch.manual_seed(2)
    theirs = [t.get_params(t.num_spikes_range, t.intensity_range) for _ in range(N)]
    _chi2([len(p["spikes_positions"]) for p in ours], [len(p[0]) for p in theirs], range(0, 4), "num_spikes")
    _ks([p["intensity"] for p in ours], [p[1] for p in theirs], "intensity (−d, d)")
    pa = np.concatenate([np.array(p["spikes_positions"]).reshape(-1, 3) for p in ours])
    pb = np.concatenate([p[0].reshape(-1, 3) for p in theirs])
    assert pa.min() >= 0 and pa.max() < 1
    for k in range(3):
        _ks(pa[:, k], pb[:, k], f"position {k}")


@pytest.mark.parametrize("shape", [(1, 16, 16, 16), (1, 16, 16)])
def test_motion_params(capi, shape):
    ours = _draw(capi, "motion", {"degrees": 8, "translation": [-3, 5], "num_transforms": 3}, shape=shape)
    t = tio.RandomMotion(degrees=8, translation=(-3, 5), num_transforms=3)
    torch.manual_seed(3)
    is_2d = len(shape) == 3
    theirs = [t.get_params(t.degrees_range, t.translation_range, 3, is_2d=is_2d) for _ in range(N)]
    times_a = np.array([p["times"] for p in ours])
    times_b = np.array([p[0] for p in theirs])
    deg_a = np.array([p["degrees"] for p in ours])
    deg_b = np.array([p[1] for p in theirs])
    tr_a = np.array([p["translation"] for p in ours])
    tr_b = np.array([p[2] for p in theirs])
    for k in range(3):
        _ks(times_a[:, k], times_b[:, k], f"time {k}")
    for axis in range(3):
        if is_2d and axis < 2:
            assert np.all(deg_a[:, :, axis] == 0)
        else:
            _ks(deg_a[:, 0, axis], deg_b[:, 0, axis], f"degrees axis {axis}")
        if is_2d and axis == 2:
            assert np.all(tr_a[:, :, axis] == 0)
        else:
            _ks(tr_a[:, 1, axis], tr_b[:, 1, axis], f"translation axis {axis}")
    assert np.abs(deg_a).max() <= 8 and tr_a.min() >= -3 and tr_a.max() <= 5
