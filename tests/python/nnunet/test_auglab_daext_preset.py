"""The client-side ``auglab_daext_gpu`` preset (augmentd.nnunet.auglab_daext): AugLab's GPU parameter JSON →
augmentd entries. Checked: the entry list for auglab 20260109's parameters (kinds, order, probabilities — the
mapping of augment/transforms/AUGLAB_DAEXT.md), that the engine builds and runs the whole pipeline on a batch with
deep supervision (shapes, finite values, labels stay labels), that every entry is applied at its configured rate
(binomial bounds over many samples), the wire form of every entry, FlipTransform → auglab_flip (AugLab's own flip,
augment/transforms/auglab_flip/), AffineTransform → auglab_affine (kornia's ranges read as AugLab passes them) and the
refusals (Acq with a crop < 1, an affine resample kornia lacks). With
``AUGLAB_PARAMS_GPU_JSON`` set, that file is also turned into a pipeline and run.
"""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

from augmentd.nnunet import auglab_daext
from augmentd.nnunet.translate import Untranslatable, entry_proto

from auglab_params_20260109 import AUGLAB_20260109  # noqa: E402

EXPECTED = [  # (kind, apply_probability) in AugTransformsGPU order, after the CPU part
    ("clamp", 0.4), ("gaussian_noise", 0.1), ("unsharp_mask", 0.1), ("multiplicative_brightness", 0.15),
    ("gamma", 0.3), ("gamma", 0.1), ("contrast", 0.15), *[("intensity_function", 0.05)] * 5,
    ("intensity_function", 0.3),
    ("histogram_equalization", 0.2), ("auglab_low_resolution", 0.25), ("auglab_low_resolution", 0.4),
    ("auglab_bias_field", 0.2), ("redistribute_seg", 0.3), ("edge_convolution", 0.15), ("unsharp_mask", 0.1),
    ("random_convolution", 0.1), ("zscore_normalization", 0.3)]

DS = [[1.0, 1.0, 1.0], [0.5, 0.5, 0.5], [0.25, 0.25, 0.25]]


def _pipe(params=AUGLAB_20260109, **kw):
    return auglab_daext.daext_gpu_pipeline(params, patch_size=[16, 16, 16], acq_axis=1,
                                           deep_supervision_scales=DS, **kw)


def test_entries_follow_auglab_order_and_probabilities():
    pipe = _pipe()
    kinds = [(e.kind, e.apply_probability) for e in pipe.entries]
    assert kinds[:3] == [("spatial", 1.0), ("remove_label", 1.0), ("zscore_normalization", 1.0)]
    assert kinds[-1] == ("downsample_seg_for_ds", 1.0)
    assert kinds[3:-1] == EXPECTED
    by_src = {e.source: e for e in pipe.entries}
    acq = [e for e in pipe.entries if e.kind == "auglab_low_resolution"][1]
    assert acq.config == {"mode": "acq", "scale": [0.2, 1.0], "scale_axes": [1]}
    blur = next(e for s, e in by_src.items() if "GaussianBlurTransform" in s)
    assert blur.config["unsharp_amount"] == -1.0 and blur.config["sigma"] == 3.0
    fns = [e for e in pipe.entries if e.kind == "intensity_function"]  # one per AugLab transform (own region each)
    assert [e.config["functions"] for e in fns] == [["log1p"], ["sqrt"], ["sin"], ["exp"], ["sigmoid"], []]
    assert [e.config["p_function"] for e in fns] == [1.0] * 5 + [0.0]
    assert [e.config["p_inverse"] for e in fns] == [0.0] * 5 + [1.0]
    fn = fns[-1]
    assert any("same_on_batch" in f for f in pipe.folded)
    # the region modes travel on the entries (augment/region_mode.h)
    assert [f for f in pipe.folded if "in_seg" in f] == []
    clamp = next(e for e in pipe.entries if e.kind == "edge_convolution")  # ScharrTransform
    assert clamp.region_mode == {"in_seg": 0.5, "out_seg": 0.5, "mix_in_out": True}
    bias = next(e for e in pipe.entries if e.kind == "auglab_bias_field")
    assert bias.region_mode == {"in_seg": 0.5, "out_seg": 0.5, "mix_in_out": False}
    assert clamp.engine_json()["region_mode"] == clamp.region_mode
    assert entry_proto(clamp).region_mode.in_seg == 0.5 and entry_proto(clamp).region_mode.mix_in_out
    assert fn.region_mode == {"in_seg": 0.5, "out_seg": 0.5, "mix_in_out": False}
    assert all(e.region_mode == fn.region_mode for e in fns)
    # without region modes: AugLab's six transforms stay one merged entry
    plain = {k: ({kk: vv for kk, vv in v.items() if kk not in ("in_seg", "out_seg", "mix_in_out")}
                 if isinstance(v, dict) else v) for k, v in AUGLAB_20260109.items()}
    merged = [e for e in _pipe(plain).entries if e.kind == "intensity_function"]
    assert len(merged) == 1 and merged[0].config["p_function"] == 0.05 and merged[0].config["p_inverse"] == 0.3
    assert all(e.region_mode is None for e in _pipe(plain).entries)
    for e in pipe.entries:  # every entry has a wire form
        assert entry_proto(e).kind != 0


def test_flip_translates_to_auglab_flip(capi):
    pipe = _pipe(dict(AUGLAB_20260109, FlipTransform={"flip_axis": [0], "probability": 0.5}))
    kinds = [e.kind for e in pipe.entries]
    assert kinds.count("auglab_flip") == 1
    flip = pipe.entries[kinds.index("auglab_flip")]
    assert flip.config == {"flip_axis": [0]} and flip.apply_probability == 0.5
    assert kinds.index("auglab_flip") == kinds.index("redistribute_seg") + 1  # AugTransformsGPU's order
    assert list(entry_proto(flip).auglab_flip.flip_axis) == [0]
    out, _ = capi.run({"op": "draw_params", "transform": {"kind": "auglab_flip", "config": flip.config},
                       "apply_probability": 1.0, "seed": 3, "first_sample_index": 0, "count": 4,
                       "image_shape": [1, 4, 4, 4]})
    assert len(out) == 4


def test_per_batch_flip_of_several_axes_is_listed_as_folded():
    """AugLab's flip shares its coins under same_on_batch but draws the fallback axis per sample: identical for one
    flip axis (the fallback is that axis), listed in folded for several (augmentd shares the whole draw)."""
    one = _pipe(dict(AUGLAB_20260109, FlipTransform={"flip_axis": [0], "probability": 0.5}), per_batch=True)
    assert one.folded == []
    two = _pipe(dict(AUGLAB_20260109, FlipTransform={"flip_axis": [0, 2], "probability": 0.5}), per_batch=True)
    assert len(two.folded) == 1 and "FlipTransform" in two.folded[0]
    assert not any("FlipTransform" in f for f in _pipe(dict(AUGLAB_20260109, FlipTransform={
        "flip_axis": [0, 2], "probability": 0.5})).folded)


def test_entry_batch_mode_strings_other_than_decision_are_refused():
    """Entry.same_on_batch is False, True or "decision"; another string (a typo) would be truthy and go out as
    same_on_batch=True (decision and parameters shared) instead of being refused."""
    from augmentd.nnunet.translate import Entry
    for mode, wire in ((False, (False, False)), (True, (True, False)), ("decision", (True, True))):
        p = entry_proto(Entry(source="t", kind="zscore_normalization", config={}, same_on_batch=mode))
        assert (p.same_on_batch, p.same_on_batch_decision_only) == wire
    for bad in ("Decision", "true", "batch"):
        with pytest.raises(ValueError, match="same_on_batch"):
            Entry(source="t", kind="zscore_normalization", config={}, same_on_batch=bad)


def test_affine_translates_to_auglab_affine(capi):
    block = {"degrees": 10, "translate": [0.1, 0.1, 0.1], "scale": [0.7, 1.4], "shear": [-10, 10, -10, 10, -10, 10],
             "resample": "bilinear", "probability": 0.5}
    assert "auglab_affine" not in [e.kind for e in _pipe().entries]  # p = 0 in the installed JSON: left out
    pipe = _pipe(dict(AUGLAB_20260109, AffineTransform=block, FlipTransform={"flip_axis": [0], "probability": 0.5}))
    kinds = [e.kind for e in pipe.entries]
    assert kinds.count("auglab_affine") == 1
    assert kinds.index("auglab_affine") == kinds.index("auglab_flip") + 1  # AugTransformsGPU's order
    assert kinds.index("auglab_affine") + 1 == kinds.index("edge_convolution")
    aff = pipe.entries[kinds.index("auglab_affine")]
    assert aff.apply_probability == 0.5
    assert aff.config == {"degrees": [-10.0, 10.0] * 3, "translate": [0.1] * 3, "scale": [0.7, 1.4] * 3,
                          "shear": [-10.0, 10.0] * 6, "resample": "bilinear"}
    proto = entry_proto(aff).auglab_affine
    assert list(proto.shear) == [-10.0, 10.0] * 6 and proto.resample == "bilinear"
    # kornia's other range forms
    cfg = auglab_daext.auglab_affine_config([5, 15, 25], [0.2, 0, 0.05], [[0.9, 1.1], [0.5, 1.0], [1.0, 2.0]],
                                            [[-2, 2], [0, 5], [-10, 0], [-1, 1], [3, 4], [-20, 20]])
    assert cfg["degrees"] == [-5, 5, -15, 15, -25, 25] and cfg["scale"] == [0.9, 1.1, 0.5, 1.0, 1.0, 2.0]
    assert cfg["shear"][2:4] == [0, 5]
    out, _ = capi.run({"op": "draw_params", "transform": {"kind": "auglab_affine", "config": aff.config},
                       "apply_probability": 1.0, "seed": 3, "first_sample_index": 0, "count": 4,
                       "image_shape": [1, 8, 8, 8]})
    assert len(out) == 4 and all(len(p["shear"]) == 6 for p in out)
    # the preset runs with it on (every sample affine-warped, labels stay labels)
    rng = np.random.default_rng(4)
    batch = (rng.standard_normal((2, 1, 18, 18, 18)) * 10 + 50).astype(np.float32)
    seg = np.zeros((2, 1, 18, 18, 18), np.int16)
    seg[:, :, 4:14, 4:14, 4:14] = 1
    _, t = _run(capi, _pipe(dict(AUGLAB_20260109, AffineTransform=dict(block, probability=1.0))), batch, seg, 6)
    assert np.isfinite(t["image"]).all() and set(np.unique(t["seg_0"])) <= {0, 1}


def test_refusals():
    with pytest.raises(Untranslatable, match="AffineTransform"):
        _pipe(dict(AUGLAB_20260109, AffineTransform={"probability": 0.5, "resample": "bicubic"}))
    with pytest.raises(Untranslatable, match="AffineTransform"):
        _pipe(dict(AUGLAB_20260109, AffineTransform={"probability": 0.5, "degrees": [1, 2, 3, 4]}))
    with pytest.raises(Untranslatable, match="AcqTransform"):
        _pipe(dict(AUGLAB_20260109, AcqTransform={"scale": [0.2, 1.0], "crop": [0.5, 1.0], "probability": 0.4}))
    with pytest.raises(Untranslatable):
        auglab_daext.daext_gpu_pipeline(AUGLAB_20260109, patch_size=[16, 16])


def _run(capi, pipe, batch, seg, seed, first=0):
    return capi.run({"op": "run_pipeline", "pipeline": pipe.engine_json(), "seed": seed, "first_sample_index": first,
                     "threads": 2}, image=batch, seg=seg)


def test_engine_runs_the_preset_with_deep_supervision(capi):
    rng = np.random.default_rng(5)
    batch = (rng.standard_normal((3, 1, 20, 22, 18)) * 40 + 100).astype(np.float32)
    seg = np.zeros((3, 1, 20, 22, 18), np.int16)
    seg[:, :, 6:14, 5:15, 4:12] = 1
    seg[:, :, 8:11, 8:12, 6:10] = 2
    out, t = _run(capi, _pipe(), batch, seg, 11)
    assert t["image"].shape == (3, 1, 16, 16, 16)
    assert [t[f"seg_{k}"].shape for k in range(3)] == [(3, 1, 16, 16, 16), (3, 1, 8, 8, 8), (3, 1, 4, 4, 4)]
    assert np.isfinite(t["image"]).all()
    assert set(np.unique(t["seg_0"])) <= {0, 1, 2}
    assert len(out["samples"]) == 3 and len(out["samples"][0]["transforms"]) == len(_pipe().entries)


def test_every_entry_is_applied_at_its_rate(capi):
    rng = np.random.default_rng(8)
    n = 300
    batch = (rng.standard_normal((n, 1, 16, 16, 16)) * 10 + 50).astype(np.float32)
    seg = np.zeros((n, 1, 16, 16, 16), np.int16)
    seg[:, :, 4:12, 4:12, 4:12] = 1
    pipe = _pipe()
    out, _ = _run(capi, pipe, batch, seg, 3)
    applied = np.array([[tr["applied"] for tr in s["transforms"]] for s in out["samples"]], float)
    for k, e in enumerate(pipe.entries):
        p = e.apply_probability
        bound = 4 * math.sqrt(p * (1 - p) / n) + 1e-9
        assert abs(applied[:, k].mean() - p) <= bound, (e.source, applied[:, k].mean(), p)


@pytest.mark.skipif(not os.environ.get(auglab_daext.ENV), reason=f"{auglab_daext.ENV} not set")
def test_users_json_builds_and_runs(capi):
    pipe = auglab_daext.daext_gpu_pipeline(auglab_daext.load_auglab_params(), patch_size=[16, 16, 16],
                                           deep_supervision_scales=DS)
    rng = np.random.default_rng(1)
    batch = rng.standard_normal((2, 1, 18, 18, 18)).astype(np.float32)
    seg = (rng.random((2, 1, 18, 18, 18)) > 0.7).astype(np.int16)
    _, t = _run(capi, pipe, batch, seg, 2)
    assert np.isfinite(t["image"]).all()


def test_per_batch_preset_runs_with_shared_decisions(capi):
    pipe = _pipe(per_batch=True)
    same = [e.same_on_batch for e in pipe.entries]
    assert any(same) and not any(e.same_on_batch for e in pipe.entries if e.kind == "spatial")
    # AugLab's same_on_batch=True draw by draw (AUGLAB_DAEXT.md's table): random_convolution and redistribute_seg
    # share only the decision (kernels / jitter per sample), every other GPU entry decision and parameters
    assert [e.same_on_batch for e in pipe.entries if e.kind in ("random_convolution", "redistribute_seg")] == \
        ["decision", "decision"]
    gpu = [e for e in pipe.entries if e.source.startswith("AugTransformsGPU")]
    assert gpu and all(e.same_on_batch is True for e in gpu if e.kind not in ("random_convolution", "redistribute_seg"))
    # the region coins: once per batch, but per sample for RandomInverseGPU (its loop over the batch)
    inverse = next(e for e in gpu if "InverseTransform" in e.source)
    assert inverse.region_mode["per_sample_coins"] is True
    assert all("per_sample_coins" not in (e.region_mode or {}) for e in gpu if e is not inverse)
    # nothing left to list as not reproduced
    assert pipe.folded == []
    protos = pipe.protos()
    assert [p.same_on_batch for p in protos] == [bool(s) for s in same]
    assert [p.same_on_batch_decision_only for p in protos] == [s == "decision" for s in same]
    assert [p.region_mode.per_sample_coins for p in protos] == [e is inverse for e in pipe.entries]
    assert [e.engine_json().get("same_on_batch", False) for e in pipe.entries] == same
    rng = np.random.default_rng(2)
    batch = (rng.standard_normal((4, 1, 16, 16, 16)) * 10 + 50).astype(np.float32)
    seg = np.zeros((4, 1, 16, 16, 16), np.int16)
    seg[:, :, 4:12, 4:12, 4:12] = 1
    for first in (0, 4, 8):
        out, t = _run(capi, pipe, batch, seg, 21, first)
        assert np.isfinite(t["image"]).all()
        applied = np.array([[tr["applied"] for tr in s["transforms"]] for s in out["samples"]])
        for k, flag in enumerate(same):
            if flag:
                assert len(set(applied[:, k])) == 1, pipe.entries[k].source


def test_intensity_entries_act_on_channel_0_only(capi):
    """AugLab's intensity transforms act on apply_to_channel=[0]: on C = 3 data the bgv2 stand-ins (noise,
    brightness, gamma, contrast) carry the channel selection [0], AugLab's own kinds their apply_to_channel [0]; run
    with everything on, channels 1 and 2 leave as the CPU part (spatial crop, z-score of channel 0) left them."""
    pipe = _pipe()
    for kind in ("gaussian_noise", "multiplicative_brightness", "gamma", "contrast"):
        es = [e for e in pipe.entries if e.kind == kind]
        assert es and all(e.channels == [0] for e in es), kind
        assert all(list(entry_proto(e).channels) == [0] for e in es)
        assert all(e.engine_json()["channels"] == [0] for e in es)
    assert all(e.channels is None for e in pipe.entries if e.kind in ("spatial", "auglab_low_resolution"))
    rng = np.random.default_rng(12)
    batch = (rng.standard_normal((2, 3, 16, 16, 16)) * 10 + 50).astype(np.float32)
    seg = np.zeros((2, 1, 16, 16, 16), np.int16)
    seg[:, :, 4:12, 4:12, 4:12] = 1
    on = [dict(e.engine_json(), apply_probability=1.0) for e in pipe.entries
          if e.kind not in ("auglab_low_resolution", "downsample_seg_for_ds")]  # lowres / acq act on all channels
    out, t = capi.run({"op": "run_pipeline", "pipeline": {"transforms": on}, "seed": 4, "first_sample_index": 0,
                       "threads": 2}, image=batch, seg=seg)
    cpu_part = [e.engine_json() for e in pipe.entries[:3]]
    _, ref = capi.run({"op": "run_pipeline", "pipeline": {"transforms": cpu_part}, "seed": 4, "first_sample_index": 0,
                       "threads": 2}, image=batch, seg=seg)
    np.testing.assert_array_equal(t["image"][:, 1:], ref["image"][:, 1:])
    assert not np.allclose(t["image"][:, 0], ref["image"][:, 0])
