"""AugLab's per-batch mode (kornia same_on_batch=True) as a pipeline entry option: ``"same_on_batch": true`` makes
the entry's apply decision and parameters one draw per batch (the batch's first sample's stream), beside the default
per-sample draws. Checked through the engine's C ABI (run_pipeline, CPU engine): within a batch every sample agrees
on the decision and the parameters; across batches they vary at the configured rate; without the option the
samples of a batch differ; per-voxel noise fields stay per sample; random_convolution's kernels, redistribute_seg's
jitter / amplitudes and auglab_affine's matrix are drawn once per batch too (identical inputs give identical outputs).
``"same_on_batch": "decision"`` shares only the decision (parameters per sample), and ``region_mode.per_sample_coins``
draws the region coins per sample; both checked against AugLab 20260109's own same_on_batch=True behaviour (the
installed package, a GPL-3.0 test reference run on the CPU) on batches of identical samples.
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


# --- "decision" mode (share only the apply decision) against AugLab's own same_on_batch=True -------------------------

torch = None  # imported by the auglab fixture (only the AugLab tests need it)


@pytest.fixture(scope="module")
def auglab():
    """AugLab 20260109's GPU transforms (GPL-3.0, a test reference only, run on the CPU) and its container."""
    from augment_capi import require_auglab

    global torch
    torch = pytest.importorskip("torch")
    require_auglab()
    import auglab.transforms.gpu.contrast as contrast
    from auglab.transforms.gpu.base import AugmentationSequentialCustom
    from auglab.transforms.gpu.fromSeg import RandomRedistributeSegGPU
    return contrast, AugmentationSequentialCustom, RandomRedistributeSegGPU


def _identical(n=4):
    rng = np.random.default_rng(0)
    image = np.repeat((rng.standard_normal((1, 1, 10, 11, 12)) * 5 + 20).astype(np.float32), n, axis=0)
    seg = np.zeros((n, 1, 10, 11, 12), np.int16)
    seg[:, :, 3:8, 2:9, 4:10] = 1
    seg[:, :, 5:7, 4:7, 5:8] = 2
    return image, seg


def _auglab_batches(auglab, make, batches):
    """AugLab's container with same_on_batch=True over `batches` batches of 4 identical samples: per batch whether
    every sample changed, whether none did, and whether the samples' outputs differ."""
    _, Seq, _ = auglab
    image, seg = _identical()
    out = []
    for k in range(batches):
        torch.manual_seed(100 + k)
        seq = Seq(make(), data_keys=["input", "mask"], same_on_batch=True)
        x = torch.from_numpy(image.copy())
        r = seq(x.clone(), torch.from_numpy(seg.astype(np.float32)))[0].numpy()
        changed = [not np.array_equal(r[b], image[b]) for b in range(4)]
        out.append((all(changed), not any(changed), any(not np.array_equal(r[b], r[0]) for b in range(4))))
    return out


DECISION_KINDS = [
    ("random_convolution", {"kernel_sizes": [3, 5, 7], "mix_prob": 0.2, "retain_stats": False},
     lambda a: a[0].RandomConvTransformGPU(kernel_type="RandConv", kernel_sizes=[3, 5, 7], mix_prob=0.2, p=0.5)),
    ("redistribute_seg", {"in_seg": 0.2, "retain_stats": False},
     lambda a: a[2](in_seg=0.2, p=0.5)),
]


@pytest.mark.parametrize("kind,config,make", DECISION_KINDS, ids=[k[0] for k in DECISION_KINDS])
def test_decision_mode_shares_the_decision_and_draws_per_sample_as_auglab(capi, auglab, kind, config, make):
    """Over batches of 4 identical samples: AugLab (same_on_batch=True) applies to all samples or none, and the
    samples of an applied batch come out different (kernels / jitter drawn per sample); augmentd's "decision" mode
    does the same, and its per-batch mode (true) gives identical samples (so the check can tell the modes apart)."""
    theirs = _auglab_batches(auglab, lambda: make(auglab), 16)
    assert all(all_ or none for all_, none, _ in theirs)
    applied = [d for all_, _, d in theirs if all_]
    assert len(applied) >= 3 and all(applied)  # AugLab: every applied batch has differing samples
    entry = {"kind": kind, "apply_probability": 0.5, "config": config}
    ours_decision, ours_batch = [], []
    for k in range(16):
        for mode, acc in (("decision", ours_decision), (True, ours_batch)):
            samples, out, image = _identical_batch(capi, dict(entry, same_on_batch=mode), first=4 * k)
            decisions = {s["transforms"][0]["applied"] for s in samples}
            assert len(decisions) == 1
            if decisions.pop():
                acc.append(any(not np.array_equal(out[b], out[0]) for b in range(1, 4)))
    assert len(ours_decision) >= 3 and all(ours_decision)
    assert len(ours_batch) >= 3 and not any(ours_batch)


def test_region_coins_per_call_except_inverse_as_auglab(capi, auglab):
    """AugLab draws _choose_region_mode's coins once per call (one batch) in its GPU classes, and once per sample in
    RandomInverseGPU (its loop over the batch): counted on AugLab by spying on the function. augmentd: with
    same_on_batch every sample of a batch gets the same region mode, with per_sample_coins they vary."""
    contrast, Seq, _ = auglab
    image, seg = _identical()
    calls = []
    real = contrast._choose_region_mode

    def spy(p_in, p_out, mask):
        calls.append(tuple(mask.shape))
        return real(p_in, p_out, mask)
    contrast._choose_region_mode = spy
    try:
        for make, expected in ((lambda: contrast.RandomBrightnessGPU(in_seg=0.5, out_seg=0.5, p=1.0), 1),
                               (lambda: contrast.RandomConvTransformGPU(kernel_type="RandConv", in_seg=0.5,
                                                                         out_seg=0.5, p=1.0), 1),
                               (lambda: contrast.RandomInverseGPU(in_seg=0.5, out_seg=0.5, p=1.0), 4)):
            calls.clear()
            Seq(make(), data_keys=["input", "mask"], same_on_batch=True)(
                torch.from_numpy(image.copy()), torch.from_numpy(seg.astype(np.float32)))
            assert len(calls) == expected, calls
    finally:
        contrast._choose_region_mode = real
    inverse = {"kind": "intensity_function", "config": {"functions": [], "p_function": 0.0, "p_inverse": 1.0},
               "same_on_batch": True}
    mixed = {False: 0, True: 0}
    for per_sample in (False, True):
        e = dict(inverse, region_mode={"in_seg": 0.5, "out_seg": 0.5, "per_sample_coins": per_sample})
        for k in range(12):
            samples, _, _ = _identical_batch(capi, e, first=4 * k)
            mixed[per_sample] += len({s["transforms"][0]["region"]["mode"] for s in samples}) > 1
    assert mixed[False] == 0
    assert mixed[True] >= 6  # P(4 samples agree) = 0.07
