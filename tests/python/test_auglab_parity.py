"""Parity of augmentd's AugLab extras (histogram_equalization, random_convolution, intensity_function) with the torch
operations AugLab's GPU transforms are built from (neuropoly/AugLab ``auglab/transforms/gpu/contrast.py``):
``torch.histc`` + ``cumsum`` + LUT indexing, ``F.pad(mode="reflect")`` + ``F.conv3d``, and the function list of
``auglab/transforms/gpu/transforms.py``. The references below are written from those definitions (per sample, as
augmentd documents), not taken from AugLab; parameters are drawn by augmentd (``draw_params``) and injected
(``apply_transform``).

Tolerances: histogram equalisation 1e-6 of the range (same float32 formula; torch.histc's bin arithmetic is
float32 as ours); random convolution 1e-5 of the range (conv3d's summation order); functions 1e-5 of the range
(library log/sin/exp in float32). Skips when torch or the engine library is missing.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _img(shape, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) ** 3 + rng.standard_normal(shape)).astype(np.float32)


def _draw(capi, kind, config, shape, seed, count):
    return capi.draw_params(kind, config, shape, seed, count)


def _ours(capi, kind, config, params, image):
    _, t = capi.run({"op": "apply_transform", "transform": {"kind": kind, "config": config}, "params": params},
                    image=image)
    return t["image"]


def _retain(y, x):
    return (y - y.mean()) / (y.std() + 1e-8) * x.std() + x.mean()


def _equalize_ref(x, retain):
    mn, mx = x.min(), x.max()
    hist = torch.histc(x.flatten(), bins=256, min=mn.item(), max=mx.item())
    cdf = hist.cumsum(0)
    cmin = cdf[cdf > 0].min()
    lut = (cdf - cmin) / (cdf[-1] - cmin + 1e-10) * (mx - mn) + mn
    idx = ((x - mn) / ((mx - mn) / 256 + 1e-10)).long().clamp(0, 255)
    y = lut[idx]
    return _retain(y, x) if retain else y


@pytest.mark.parametrize("retain", [False, True])
def test_histogram_equalization_matches_torch(capi, retain):
    cfg = {"apply_to_channel": [0, 2], "retain_stats": retain}
    img = _img((3, 20, 22, 24), 1)
    params = _draw(capi, "histogram_equalization", cfg, img.shape, 3, 1)[0]
    out = _ours(capi, "histogram_equalization", cfg, params, img)
    for c in range(3):
        x = torch.from_numpy(img[c].copy())
        ref = _equalize_ref(x, retain).numpy() if c in (0, 2) else img[c]
        np.testing.assert_allclose(out[c], ref, atol=1e-6 * float(np.ptp(ref)) + 1e-7, rtol=0)


@pytest.mark.parametrize("retain", [False, True])
def test_random_convolution_matches_torch(capi, retain):
    cfg = {"apply_to_channel": [1], "kernel_sizes": [1, 3, 5, 7], "mix_prob": 0.5, "retain_stats": retain}
    shape = (2, 17, 19, 21)
    for i, params in enumerate(_draw(capi, "random_convolution", cfg, shape, 11, 6)):
        img = _img(shape, 20 + i)
        out = _ours(capi, "random_convolution", cfg, params, img)
        k = params["kernel_size"][0]
        w = torch.tensor(params["kernel"][0], dtype=torch.float64).reshape(1, 1, k, k, k)
        x = torch.from_numpy(img[1].astype(np.float64))
        p = k // 2
        y = F.conv3d(F.pad(x[None, None], [p] * 6, mode="reflect"), w)[0, 0]
        if params["mix"][0]:
            a = params["alpha"][0]
            y = a * x + (1 - a) * y
        if retain:
            y = _retain(y, x)
        ref = y.numpy()
        np.testing.assert_allclose(out[1], ref, atol=1e-5 * float(np.ptp(ref)), rtol=0, err_msg=f"k={k}")
        np.testing.assert_array_equal(out[0], img[0])


FUNCS = {"log1p": lambda v: torch.log(1 + v), "sqrt": torch.sqrt, "sin": torch.sin, "exp": torch.exp,
         "sigmoid": lambda v: 1 / (1 + torch.exp(-v)), "square": lambda v: v ** 2}


@pytest.mark.parametrize("retain", [False, True])
def test_intensity_function_matches_torch(capi, retain):
    names = ["log1p", "sqrt", "sin", "exp", "sigmoid", "square"]
    cfg = {"functions": names, "p_function": 0.5, "p_inverse": 0.5, "retain_stats": retain,
           "inverse_retain_stats": retain}
    shape = (1, 16, 18, 20)
    for i, params in enumerate(_draw(capi, "intensity_function", cfg, shape, 5, 8)):
        img = _img(shape, 40 + i)
        out = _ours(capi, "intensity_function", cfg, params, img)
        x = torch.from_numpy(img[0].copy())
        for name, on in zip(names, params["functions"]):
            if on:
                y = FUNCS[name]((x - x.min()) / (x.max() - x.min() + 0.00001))
                x = _retain(y, x) if retain else y
        if params["inverse"]:
            y = x.max() - x
            x = _retain(y, x) if retain else y
        ref = x.numpy()
        np.testing.assert_allclose(out[0], ref, atol=1e-5 * max(float(np.ptp(ref)), 1.0), rtol=0,
                                   err_msg=str(params))


def test_region_modes_blend_like_auglab(capi):
    """in_seg / out_seg / mix_in_out (augment/transforms/common/auglab_region.h): the whole-channel result blended with the
    original as AugLab's _apply_region_mode does, ``m * t + (1 - m) * orig``, with m = seg[seg_channel] > 0 restricted
    to the kept labels (augmentd's label-map reading of AugLab's mask) and inverted for "out"."""
    cfg = {"kernel_sizes": [3], "mix_prob": 0.0, "in_seg": 0.5, "out_seg": 0.5, "mix_in_out": True, "seg_channel": 1}
    shape = (1, 12, 13, 14)
    seg = np.random.default_rng(3).integers(-1, 4, size=(2,) + shape[1:]).astype(np.int16)
    lab = seg[1].astype(np.int64)
    modes = set()
    drawn, _ = capi.run({"op": "draw_params", "transform": {"kind": "random_convolution", "config": cfg},
                         "apply_probability": 1.0, "seed": 9, "first_sample_index": 0, "count": 16,
                         "image_shape": list(shape), "seg_channels": 2})
    for i, params in enumerate(drawn):
        params.pop("applied", None)
        img = _img(shape, 60 + i)
        _, t = capi.run({"op": "apply_transform", "transform": {"kind": "random_convolution", "config": cfg},
                         "params": params}, image=img, seg=seg)
        x = torch.from_numpy(img[0].astype(np.float64))
        w = torch.tensor(params["kernel"][0], dtype=torch.float64).reshape(1, 1, 3, 3, 3)
        y = F.conv3d(F.pad(x[None, None], [1] * 6, mode="reflect"), w)[0, 0].numpy()
        mode, keep = params["region"][0], int(params["region_labels"][0])
        kept = np.vectorize(lambda v: (keep >> (int(v) % 64)) & 1 == 1)(lab)
        fg = ((lab > 0) & kept).astype(np.float64)
        m = {"all": np.ones_like(fg), "in": fg, "out": 1.0 - fg}[mode]
        ref = m * y + (1.0 - m) * x.numpy()
        modes.add(mode)
        np.testing.assert_allclose(t["image"][0], ref, atol=1e-5 * float(np.ptp(ref)), rtol=0, err_msg=mode)
    assert modes == {"all", "in", "out"}
