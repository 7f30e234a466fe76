"""Parity of augmentd's cascade transforms (nnU-Net's 3d_cascade_fullres, reference §3 row 13) with the installed
batchgeneratorsv2: MoveSegAsOneHotToDataTransform, ApplyRandomBinaryOperatorTransform (skimage disk / ball footprints,
fractional radii included, bgv2's fft_conv dilation) and RemoveRandomConnectedComponentFromOneHotEncodingTransform
(skimage.measure.label, full connectivity). Parameters are injected: bgv2's own get_parameters() dict for the binary
operator; for the connected-component transform bgv2 draws its choices inside apply with np.random, so the test
records those draws (np.random.choice / np.random.uniform) and injects the same choices into augmentd
(component_draw / fill_draw / other_class_draw). Outputs are 0/1 masks: bgv2's fft_conv rounds an integer-valued
correlation (at most 17³ ones) whose float error is far below 0.5, so the comparison is exact on any CPU.
"""
from __future__ import annotations

import numpy as np
import pytest

from bgv2_ref import augmentd_apply

torch = pytest.importorskip("torch")
from batchgeneratorsv2.transforms.nnunet.random_binary_operator import (  # noqa: E402
    ApplyRandomBinaryOperatorTransform, binary_closing_torch, binary_dilation_torch, binary_erosion_torch,
    binary_opening_torch)
from batchgeneratorsv2.transforms.nnunet.remove_connected_components import (  # noqa: E402
    RemoveRandomConnectedComponentFromOneHotEncodingTransform)
from batchgeneratorsv2.transforms.nnunet.seg_to_onehot import MoveSegAsOneHotToDataTransform  # noqa: E402

OPS = {"dilation": binary_dilation_torch, "erosion": binary_erosion_torch, "closing": binary_closing_torch,
       "opening": binary_opening_torch}


def _blob_seg(rng, shape, labels, boxes=6):
    """A label map of random boxes (several components per label, touching ones too)."""
    seg = np.zeros(shape, np.int16)
    for _ in range(boxes):
        for lab in labels:
            lo = [int(rng.integers(0, s - 2)) for s in shape]
            hi = [min(s, a + int(rng.integers(1, max(2, s // 3)))) for a, s in zip(lo, shape)]
            seg[tuple(slice(a, b) for a, b in zip(lo, hi))] = lab
    return seg


def _one_hot_image(rng, shape, labels, channels=1):
    img = rng.standard_normal((channels, *shape)).astype(np.float32)
    seg = _blob_seg(rng, shape, labels)
    oh = np.stack([(seg == lab).astype(np.float32) for lab in labels])
    return np.concatenate([img, oh]), seg


@pytest.mark.parametrize("shape", [(9, 10, 11), (13, 12)])
@pytest.mark.parametrize("remove", [True, False])
def test_move_seg_as_one_hot_matches_bgv2(capi, shape, remove):
    rng = np.random.default_rng(len(shape) + remove)
    img = rng.standard_normal((2, *shape)).astype(np.float32)
    seg = np.stack([_blob_seg(rng, shape, [1, 2, 3]), _blob_seg(rng, shape, [1, 2, 3])]).astype(np.int16)
    seg[0, 0] = -1
    t = MoveSegAsOneHotToDataTransform(source_channel_idx=1, all_labels=[1, 2, 3], remove_channel_from_source=remove)
    ref = t(image=torch.from_numpy(img.copy()), segmentation=torch.from_numpy(seg.copy()))
    config = {"source_channel_idx": 1, "all_labels": [1, 2, 3], "remove_channel_from_source": remove}
    _, out = augmentd_apply(capi, "move_seg_as_one_hot_to_data", config, {}, image=img, seg=seg)
    assert out["image"].shape == tuple(ref["image"].shape) == (5, *shape)
    np.testing.assert_array_equal(out["image"], ref["image"].numpy())
    np.testing.assert_array_equal(out["seg"], ref["segmentation"].numpy())


CASES = [(op, r, shape) for op in OPS for r, shape in [(1, (12, 13, 14)), (1.6, (12, 13, 14)), (2.5, (14, 12, 15)),
                                                       (3.7, (16, 15, 17)), (1, (20, 21)), (2.2, (20, 21)),
                                                       (3.7, (23, 22)), (6.4, (30, 28))]]


@pytest.mark.parametrize("op,r,shape", CASES)
def test_binary_operator_matches_bgv2(capi, op, r, shape):
    rng = np.random.default_rng(int(r * 10) + len(shape))
    img, _ = _one_hot_image(rng, shape, [1, 2, 3])
    channel_idx = [-3, -2, -1]
    t = ApplyRandomBinaryOperatorTransform(channel_idx=list(channel_idx), strel_size=(1, 8), p_per_label=1)
    apply = [-2, -3]  # applied in this order: the second sees the first's changes
    params = {"apply_to_channels": apply, "operators": [OPS[op], OPS[op]], "strel_size": [r, r * 0.8 + 0.3]}
    with torch.no_grad():
        ref = t._apply_to_image(torch.from_numpy(img.copy()), **params).numpy()
    ours = {"apply_to_channels": apply, "operators": [op, op], "strel_size": params["strel_size"]}
    config = {"channel_idx": channel_idx, "strel_size": [1, 8], "p_per_label": 1}
    _, out = augmentd_apply(capi, "apply_random_binary_operator", config, ours, image=img)
    np.testing.assert_array_equal(out["image"][0], img[0])
    mism = int((out["image"] != ref).sum())
    assert mism == 0, f"{op} r={r}: {mism} voxels differ"
    assert (ref[1:] != img[1:]).any() or op in ("opening", "closing"), "the case should change something"


def test_binary_operator_draws(capi):
    """bgv2's get_parameters: coins p_per_label, operator uniform over any_of_these, radius ~ strel_size."""
    config = {"channel_idx": [-2, -1], "strel_size": [1, 8], "p_per_label": 0.5}
    params = capi.draw_params("apply_random_binary_operator", config, [3, 8, 8, 8], 3, 3000)
    n = [len(p["apply_to_channels"]) for p in params]
    assert abs(np.mean(n) / 2 - 0.5) < 0.03
    ops = [o for p in params for o in p["operators"]]
    for name in OPS:
        assert abs(ops.count(name) / len(ops) - 0.25) < 0.03, name
    r = np.array([s for p in params for s in p["strel_size"]])
    assert r.min() >= 1 and r.max() < 8 and abs(r.mean() - 4.5) < 0.15
    assert {tuple(p["apply_to_channels"]) for p in params if len(p["apply_to_channels"]) == 2} == {(-2, -1), (-1, -2)}


def _bgv2_remove_cc_with_draws(t, img, params, monkeypatch):
    """bgv2's output and, per applied channel, (valid ids, chosen id, fill draw, other channels, chosen other)."""
    log = []
    real_choice, real_uniform = np.random.choice, np.random.uniform

    def choice(a, *args, **kw):
        v = real_choice(a, *args, **kw)
        log.append(("choice", list(a), v))
        return v

    def uniform(*args, **kw):
        v = real_uniform(*args, **kw)
        log.append(("uniform", v))
        return v
    with monkeypatch.context() as m:
        m.setattr(np.random, "choice", choice)
        m.setattr(np.random, "uniform", uniform)
        with torch.no_grad():
            out = t._apply_to_image(torch.from_numpy(img.copy()), **params).numpy()
    return out, log


@pytest.mark.parametrize("shape,fill_p,pct", [((14, 15, 16), 0.0, 0.15), ((14, 15, 16), 1.0, 0.15),
                                               ((30, 31), 0.5, 0.25), ((30, 31), 1.0, 0.05)])
def test_remove_connected_component_matches_bgv2(capi, monkeypatch, shape, fill_p, pct):
    rng = np.random.default_rng(sum(shape))
    channel_idx = [-3, -2, -1]
    config = {"channel_idx": channel_idx, "fill_with_other_class_p": fill_p,
              "dont_do_if_covers_more_than_x_percent": pct, "p_per_label": 1}
    t = RemoveRandomConnectedComponentFromOneHotEncodingTransform(
        channel_idx=list(channel_idx), fill_with_other_class_p=fill_p, dont_do_if_covers_more_than_x_percent=pct,
        p_per_label=1)
    removed = 0
    for trial in range(6):
        img, _ = _one_hot_image(rng, shape, [1, 2, 3])
        apply = [int(c) for c in rng.permutation(channel_idx)]
        np.random.seed(100 + trial)
        # bgv2 handles the applied channels one after the other; running it one channel at a time gives the same
        # output and tells which draws belong to which channel: choice(valid ids) [, uniform() [, choice(other)]].
        ref = img
        comp, fill, other = [], [], []
        for a in apply:
            ref, log = _bgv2_remove_cc_with_draws(t, ref, {"apply_to_channels": [a]}, monkeypatch)
            c, f, o = 0.0, 0.99, 0.0
            if log:
                valid, chosen = log[0][1], log[0][2]
                c = (valid.index(chosen) + 0.5) / len(valid)
                f = log[1][1]
                if len(log) > 2:
                    ours_other = [x for x in channel_idx if x != a]
                    assert sorted(log[2][1]) == sorted(ours_other)
                    o = (ours_other.index(log[2][2]) + 0.5) / len(ours_other)
                assert len(log) == (3 if f < fill_p else 2), log
                removed += 1
            comp.append(c)
            fill.append(f)
            other.append(o)
        params = {"apply_to_channels": apply, "component_draw": comp, "fill_draw": fill, "other_class_draw": other}
        _, out = augmentd_apply(capi, "remove_random_connected_component", config, params, image=img)
        np.testing.assert_array_equal(out["image"][0], img[0])
        mism = int((out["image"] != ref).sum())
        assert mism == 0, f"trial {trial}: {mism} voxels differ"
    assert removed > 0, "no component was ever removed: the cases test nothing"


def test_remove_connected_component_keeps_large_components(capi):
    """A component covering ≥ dont_do_if_covers_more_than_x_percent of the sample is never removed."""
    img = np.zeros((1, 10, 10, 10), np.float32)
    img[0, :6] = 1  # 60 %
    config = {"channel_idx": [0], "dont_do_if_covers_more_than_x_percent": 0.5}
    params = {"apply_to_channels": [0], "component_draw": [0.5], "fill_draw": [0.5], "other_class_draw": [0.5]}
    _, out = augmentd_apply(capi, "remove_random_connected_component", config, params, image=img)
    np.testing.assert_array_equal(out["image"], img)
    config["dont_do_if_covers_more_than_x_percent"] = 0.61
    _, out = augmentd_apply(capi, "remove_random_connected_component", config, params, image=img)
    assert not out["image"].any()

