"""The per-entry channel selection (TransformSpec ``"channels"``, AugLab's ``apply_to_channel`` / the issue's "noise on
selected channels"): the entry draws and applies as on a sample holding only the selected channels, the other
channels pass through bit for bit. Checked through the engine's C ABI (run_pipeline, CPU engine) on C = 3 data:
unselected channels unchanged, selected ones equal to running the entry on those channels alone (same seed, same
stream), the selection's order honoured, the default (no selection) unchanged, and the refusals (a label kind, a
channel the sample lacks, an empty or repeated list). The CUDA chain runs the same selection on gathered planes
(augment/cuda/chain.cc); its GPU = CPU check is augment/cuda/chain_test.cc's EntryChannelsMatchCpu.
"""
from __future__ import annotations

import numpy as np
import pytest

NOISE = {"kind": "gaussian_noise", "config": {"noise_variance": [0.5, 0.5], "p_per_channel": 1,
                                              "synchronize_channels": False}}
GAMMA = {"kind": "gamma", "config": {"gamma": [0.5, 2.0], "p_invert_image": 0, "synchronize_channels": False,
                                     "p_per_channel": 1, "p_retain_stats": 0}}
BRIGHT = {"kind": "multiplicative_brightness", "config": {"multiplier_range": [0.5, 1.5],
                                                          "synchronize_channels": False, "p_per_channel": 1}}


def _image(c=3, batch=2, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((batch, c, 6, 7, 8)) * 3 + 10).astype(np.float32)


def _run(capi, transforms, image, seed=9, first=0):
    out, t = capi.run({"op": "run_pipeline", "pipeline": {"transforms": transforms}, "seed": seed,
                       "first_sample_index": first, "threads": 2}, image=image)
    return out["samples"], t["image"]


@pytest.mark.parametrize("entry", [NOISE, GAMMA, BRIGHT], ids=lambda e: e["kind"])
@pytest.mark.parametrize("channels", [[0], [2], [2, 0], [0, 1, 2]])
def test_selected_channels_equal_the_entry_on_those_channels_alone(capi, entry, channels):
    image = _image()
    _, out = _run(capi, [dict(entry, channels=channels)], image)
    # the same entry, same seed, on an image holding only the selected channels (in the selection's order)
    _, alone = _run(capi, [entry], np.ascontiguousarray(image[:, channels]))
    for k, c in enumerate(channels):
        np.testing.assert_array_equal(out[:, c], alone[:, k])
        assert not np.array_equal(out[:, c], image[:, c])
    for c in set(range(3)) - set(channels):
        np.testing.assert_array_equal(out[:, c], image[:, c])


def test_no_selection_is_every_channel(capi):
    image = _image()
    _, all_default = _run(capi, [NOISE], image)
    _, all_named = _run(capi, [dict(NOISE, channels=[0, 1, 2])], image)
    np.testing.assert_array_equal(all_default, all_named)
    samples, _ = _run(capi, [dict(GAMMA, channels=[1])], image)
    assert len(samples[0]["transforms"][0]["params"]["gamma"]) == 1  # one channel drawn


def test_selection_with_the_auglab_kinds_and_a_chain(capi):
    # a pipeline mixing a selection, a full-channel entry and a spatial entry (selection after it)
    image = _image(c=3, batch=3, seed=4)
    spatial = {"kind": "mirror", "config": {"allowed_axes": [0, 1, 2]}}
    _, out = _run(capi, [spatial, dict(NOISE, channels=[1])], image, seed=2)
    _, ref = _run(capi, [spatial], image, seed=2)
    np.testing.assert_array_equal(out[:, [0, 2]], ref[:, [0, 2]])
    assert not np.array_equal(out[:, 1], ref[:, 1])


@pytest.mark.parametrize("bad,match", [
    ({"kind": "mirror", "config": {"allowed_axes": [0]}, "channels": [0]}, "transform.channels"),
    (dict(NOISE, channels=[]), "transform.channels"),
    (dict(NOISE, channels=[1, 1]), "transform.channels"),
    (dict(NOISE, channels=[-1]), "transform.channels"),
    (dict(NOISE, channels=[3]), "transform.channels"),
])
def test_refusals(capi, bad, match):
    with pytest.raises(Exception, match=match):
        _run(capi, [bad], _image())
