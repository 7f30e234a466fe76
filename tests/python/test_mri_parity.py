"""Parity of augmentd's MRI artefacts (bias_field, ghosting, spike, motion) with TorchIO's deterministic transforms.

Method: augmentd draws each sample's parameters with its own Philox streams (``draw_params``; TorchIO's torch RNG
cannot be aligned), the same parameters are injected into augmentd (``apply_transform``) and given to TorchIO's
deterministic class (``tio.BiasField``, ``tio.Ghosting``, ``tio.Spike``, ``tio.Motion``) on the same float32
image; outputs are compared per channel relative to the channel's value range.

Tolerances:
* bias_field: 1e-6 relative — both compute the polynomial in float64 and multiply float32 · float32(exp(field)).
* ghosting / spike: 1e-5 of the range — TorchIO transforms in complex64 (torch.fft on float32), augmentd's CPU
  reference in complex128: the float32 FFT's rounding (~1e-7 · log n relative to the spectrum's norm) is the
  whole difference.
* motion: 1e-5 of the range, as above: augmentd replicates SimpleITK's geometry (rotation about the physical
  origin after TorchIO's matrix round trip, RAS→LPS flip, default value = channel minimum) and its linear
  interpolation's border conventions (inside iff −0.5 <= ci < n − 0.5, clamped neighbours); what remains is the
  interpolation's evaluation order (nested lerps vs weighted corners) and the complex64 FFT.

Skips cleanly when torchio (or the engine library) is missing.
"""

from __future__ import annotations

import numpy as np
import pytest

tio = pytest.importorskip("torchio")
torch = pytest.importorskip("torch")

SHAPES = [(2, 20, 23, 17), (1, 32, 30, 41), (1, 24, 24, 1)]


def _image(seed, shape):
    rng = np.random.default_rng(seed)
    # smooth-ish positive structure plus noise, like an MR image (never all zeros)
    img = rng.normal(1.0, 0.5, size=shape).astype(np.float32)
    img += np.linspace(0, 2, shape[1], dtype=np.float32)[None, :, None, None]
    return img


def _draw(capi, kind, config, shape, seed, count):
    return capi.draw_params(kind, config, shape, seed, count)


def _ours(capi, kind, config, params, image):
    img = image if image.shape[-1] != 1 else image[..., 0]  # augmentd's 2D sample = TorchIO's (C, W, H, 1)
    _, t = capi.run({"op": "apply_transform", "transform": {"kind": kind, "config": config}, "params": params},
                    image=img)
    return t["image"].reshape(image.shape)


def _theirs(transform, image):
    subject = tio.Subject(img=tio.ScalarImage(tensor=torch.from_numpy(image.copy())))
    return transform(subject)["img"].data.numpy()


def _rel_err(ours, theirs, image):
    errs = []
    for c in range(image.shape[0]):
        rng = float(theirs[c].max() - theirs[c].min()) or 1.0
        errs.append(float(np.abs(ours[c].astype(np.float64) - theirs[c]).max()) / rng)
    return max(errs)


def _check(capi, kind, config, make_tio, tol, seeds=(1, 2, 3)):
    worst = 0.0
    for shape in SHAPES:
        for seed in seeds:
            image = _image(seed, shape)
            layout = list(shape) if shape[-1] != 1 else list(shape[:-1])
            for params in _draw(capi, kind, config, layout, seed, 2):
                ours = _ours(capi, kind, config, params, image)
                theirs = _theirs(make_tio(params), image)
                err = _rel_err(ours, theirs, image)
                assert err < tol, (kind, shape, seed, params, err)
                worst = max(worst, err)
    print(f"{kind}: worst error / range = {worst:.3g}")
    return worst


def test_bias_field_parity(capi):
    config = {"coefficients": 0.5, "order": 3}
    _check(capi, "bias_field", config, lambda p: tio.BiasField(coefficients=p["coefficients"], order=p["order"]), 1e-6)


def test_ghosting_parity(capi):
    for config in ({}, {"num_ghosts": [1, 3], "restore": [0.05, 0.5], "intensity": 0.9}):
        _check(capi, "ghosting", config,
               lambda p: tio.Ghosting(num_ghosts=p["num_ghosts"], axis=p["axis"], intensity=p["intensity"],
                                      restore=p["restore"]), 1e-5)


def test_spike_parity(capi):
    for config in ({}, {"num_spikes": [1, 4], "intensity": 2.0}):
        _check(capi, "spike", config,
               lambda p: tio.Spike(spikes_positions=np.array(p["spikes_positions"], dtype=np.float64).reshape(-1, 3),
                                   intensity=p["intensity"]), 1e-5)


def _tio_motion(p):
    return tio.Motion(degrees=np.array(p["degrees"], dtype=np.float64), translation=np.array(p["translation"],
                      dtype=np.float64), times=np.array(p["times"], dtype=np.float32), image_interpolation="linear")


def test_motion_parity(capi):
    for config in ({}, {"degrees": 3, "translation": 2, "num_transforms": 3}):
        _check(capi, "motion", config, _tio_motion, 1e-5)


def test_motion_integer_translation_exact_geometry(capi):
    """Integer translations hit voxel centres: ITK and augmentd sample the same voxels, so only FFT rounding differs."""
    image = _image(9, (1, 16, 18, 20))
    params = {"degrees": [[0, 0, 0], [0, 0, 0]], "translation": [[2, -3, 1], [-1, 0, 4]], "times": [0.3, 0.62]}
    ours = _ours(capi, "motion", {}, params, image)
    theirs = _theirs(_tio_motion(params), image)
    assert _rel_err(ours, theirs, image) < 1e-5


def test_pipeline_reports_params_that_replay_exactly(capi):
    """run_pipeline draws per sample; the reported params, injected into apply_transform, reproduce each sample."""
    kinds = ("bias_field", "ghosting", "spike", "motion")
    image = np.stack([_image(s, (1, 18, 20, 16)) for s in (4, 5)])
    seg = np.zeros((2, 1, 18, 20, 16), np.int16)
    for kind in kinds:
        pipe = {"transforms": [{"kind": kind, "apply_probability": 1.0, "config": {}}]}
        out, t = capi.run({"op": "run_pipeline", "pipeline": pipe, "seed": 11, "first_sample_index": 0,
                           "threads": 1}, image=image, seg=seg)
        for b, sample in enumerate(out["samples"]):
            rec = sample["transforms"][0]
            assert rec["kind"] == kind and rec["applied"]
            replay = _ours(capi, kind, {}, rec["params"], image[b])
            np.testing.assert_array_equal(replay, t["image"][b])
        assert not np.array_equal(t["image"][0], t["image"][1])
