"""AugLab's per-batch mode (kornia same_on_batch=True) as a pipeline entry option: ``"same_on_batch": true`` makes
the entry's apply decision and parameters one draw per batch (the batch's first sample's stream), beside the default
per-sample draws. Checked through the engine's C ABI (run_pipeline, CPU engine): within a batch every sample agrees
on the decision and the parameters; across batches they vary at the configured rate; without the option the
samples of a batch differ; per-voxel noise fields stay per sample.
"""
from __future__ import annotations

import numpy as np


def _run(capi, transforms, batch, first, seed=7):
    rng = np.random.default_rng(first)
    image = rng.standard_normal((batch, 1, 6, 7, 8)).astype(np.float32)
    out, t = capi.run({"op": "run_pipeline", "pipeline": {"transforms": transforms}, "seed": seed,
                       "first_sample_index": first, "threads": 2}, image=image)
    return out["samples"], t["image"]


GAMMA = {"kind": "gamma", "apply_probability": 0.5, "config": {"gamma": [0.7, 1.5], "p_invert_image": 0,
                                                               "synchronize_channels": True, "p_per_channel": 1,
                                                               "p_retain_stats": 0}}


def test_one_decision_and_draw_per_batch(capi):
    applied_batches = []
    for k in range(60):
        samples, _ = _run(capi, [dict(GAMMA, same_on_batch=True)], 4, first=4 * k)
        decisions = [s["transforms"][0]["applied"] for s in samples]
        assert len(set(decisions)) == 1, decisions
        if decisions[0]:
            gammas = [s["transforms"][0]["params"]["gamma"] for s in samples]
            assert all(g == gammas[0] for g in gammas), gammas
        applied_batches.append(decisions[0])
    assert 0.3 < np.mean(applied_batches) < 0.7  # p = 0.5 per batch (60 batches: ±3.9 sd)


def test_per_sample_default_differs_within_a_batch(capi):
    mixed = 0
    for k in range(20):
        samples, _ = _run(capi, [GAMMA], 4, first=4 * k)
        mixed += len({s["transforms"][0]["applied"] for s in samples}) > 1
    assert mixed >= 10


def test_noise_fields_stay_per_sample(capi):
    noise = {"kind": "gaussian_noise", "same_on_batch": True, "config": {"noise_variance": [0.1, 0.1],
                                                                         "p_per_channel": 1,
                                                                         "synchronize_channels": True}}
    rng = np.random.default_rng(0)
    image = np.repeat(rng.standard_normal((1, 1, 6, 7, 8)).astype(np.float32), 3, axis=0)
    _, t = capi.run({"op": "run_pipeline", "pipeline": {"transforms": [noise]}, "seed": 3, "first_sample_index": 0},
                    image=image)
    assert not np.array_equal(t["image"][0], t["image"][1])
