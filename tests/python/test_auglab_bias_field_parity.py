"""Parity of augmentd's ``auglab_bias_field`` with AugLab's own ``RandomBiasFieldGPU`` (the installed ``auglab``
package, GPL-3.0: a test dependency only, run on the CPU; see test_auglab_zscore_parity.py for the install). The
coefficients are injected: the test replaces the instance's ``_sample_coeffs`` by one returning chosen (n, B)
values, and gives augmentd sample b's column. Tolerance: 1e-5 relative per voxel (float32 polynomial summed in the
same order; torch's pow / exp may differ by an ulp), 1e-5 of the range with retain_stats (torch's float32 mean/std
against augmentd's double statistics). Untouched channels are identical. The sampler: a KS test.
"""
from __future__ import annotations

import numpy as np
import pytest

from augment_capi import require_auglab

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def auglab_bias():
    require_auglab()
    from auglab.transforms.gpu.contrast import RandomBiasFieldGPU
    return RandomBiasFieldGPU


@pytest.mark.parametrize("retain", [False, True])
@pytest.mark.parametrize("shape,channels,apply,order,coef", [((9, 11, 13), 1, [0], 3, 0.5), ((6, 20, 7), 3, [0, 2], 2, 0.3),
                                                             ((15, 12), 2, [1], 3, 0.5), ((5, 8, 10), 1, [0], 0, 0.4)])
def test_bias_field_matches_auglab(capi, auglab_bias, shape, channels, apply, order, coef, retain):
    rng = np.random.default_rng(23 + channels + order)
    n = 3
    batch = (rng.standard_normal((n, channels, *shape)) * 20 + 60).astype(np.float32)
    t = auglab_bias(coefficients=coef, order=order, apply_to_channel=apply, retain_stats=retain, p=1.0)
    ncoef = t._num_coeffs(len(shape))
    coeffs = rng.uniform(-coef, coef, (ncoef, n)).astype(np.float32)
    t._sample_coeffs = lambda *a, **k: torch.from_numpy(coeffs.copy())
    ref = t.apply_transform(torch.from_numpy(batch.copy()), {}, t.flags).numpy()
    config = {"coefficients": coef, "order": order, "apply_to_channel": apply, "retain_stats": retain}
    for b in range(n):
        _, out = capi.run({"op": "apply_transform", "transform": {"kind": "auglab_bias_field", "config": config},
                           "params": {"coefficients": [float(v) for v in coeffs[:, b]]}}, image=batch[b])
        ours = out["image"]
        for c in range(channels):
            if c not in apply:
                np.testing.assert_array_equal(ours[c], batch[b, c])
                continue
            r = ref[b, c].astype(np.float64)
            if retain:
                err, tol = float(np.abs(ours[c] - r).max()), 1e-5 * float(r.max() - r.min())
            else:
                err, tol = float((np.abs(ours[c] - r) / np.maximum(np.abs(r), 1e-6)).max()), 1e-5
            assert err <= tol, f"sample {b} channel {c}: {err:.3g} > {tol:.3g}"
        if order > 0:
            assert not np.allclose(ref[b, apply[0]], batch[b, apply[0]])


def test_coefficient_draws_are_uniform(capi):
    from scipy import stats
    params = capi.draw_params("auglab_bias_field", {"coefficients": 0.5}, [1, 4, 4, 4], 4, 600)
    c = np.array([p["coefficients"] for p in params])
    assert c.shape == (600, 20)
    assert stats.kstest((c.ravel() + 0.5), "uniform").pvalue > 0.01
    assert abs(np.corrcoef(c[:, 0], c[:, 1])[0, 1]) < 0.12
