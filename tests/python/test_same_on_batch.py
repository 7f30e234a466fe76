"""AugLab's per-batch mode (kornia same_on_batch=True) as a pipeline entry option: ``"same_on_batch": true`` makes
the entry's apply decision and parameters one draw per batch (the batch's first sample's stream), beside the default
per-sample draws. Checked through the engine's C ABI (run_pipeline, CPU engine): within a batch every sample agrees
on the decision and the parameters; across batches they vary at the configured rate; without the option the
samples of a batch differ; per-voxel noise fields stay per sample; random_convolution's kernels, redistribute_seg's
jitter / amplitudes and auglab_affine's matrix are drawn once per batch too (identical inputs give identical outputs).
"""
from __future__ import annotations

import numpy as np
import pytest


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


PER_BATCH_KINDS = [
    {"kind": "random_convolution", "apply_probability": 0.5,
     "config": {"kernel_sizes": [3, 5], "mix_prob": 0.5, "retain_stats": False}},
    {"kind": "redistribute_seg", "apply_probability": 0.5, "config": {"in_seg": 0.5, "retain_stats": False}},
    {"kind": "auglab_affine", "apply_probability": 0.5, "config": {}},
]


def _identical_batch(capi, entry, first, seed=5):
    rng = np.random.default_rng(0)
    image = np.repeat((rng.standard_normal((1, 1, 10, 11, 12)) * 5 + 20).astype(np.float32), 4, axis=0)
    seg = np.zeros((4, 1, 10, 11, 12), np.int16)
    seg[:, :, 3:8, 2:9, 4:10] = 1
    seg[:, :, 5:7, 4:7, 5:8] = 2
    out, t = capi.run({"op": "run_pipeline", "pipeline": {"transforms": [entry]}, "seed": seed,
                       "first_sample_index": first, "threads": 2}, image=image, seg=seg)
    return out["samples"], t["image"], image



@pytest.mark.parametrize("entry", PER_BATCH_KINDS, ids=lambda e: e["kind"])
def test_per_batch_draw_covers_convolution_redistribution_and_affine(capi, entry):
    applied = 0
    for k in range(12):
        samples, out, image = _identical_batch(capi, dict(entry, same_on_batch=True), first=4 * k)
        decisions = [s["transforms"][0]["applied"] for s in samples]
        assert len(set(decisions)) == 1, decisions
        if decisions[0]:
            applied += 1
            params = [s["transforms"][0]["params"] for s in samples]
            assert all(p == params[0] for p in params), entry["kind"]
            for b in range(1, 4):
                np.testing.assert_array_equal(out[b], out[0])
            assert not np.array_equal(out[0], image[0])
    assert 2 <= applied <= 10  # p = 0.5 per batch (12 batches)
    # per sample (the default): the samples of a batch get their own draws
    differ = 0
    for k in range(6):
        samples, out, _ = _identical_batch(capi, dict(entry, apply_probability=1.0), first=4 * k)
        differ += any(not np.array_equal(out[b], out[0]) for b in range(1, 4))
    assert differ >= 5
