"""The whole ``nnunet_default`` pipeline against nnU-Net 2.8.1's own ``nnUNetTrainer.get_training_transforms`` and
``configure_rotation_dummyDA_mirroring_and_inital_patch_size`` / ``get_patch_size``.

* ``initial_patch_size``: augmentd's geometry (initial patch size, rotation range, dummy-2D flag, mirror axes) equals
  what nnU-Net's trainer computes, for the patch sizes of reference §2.2 and edge cases.
* ``preset``: augmentd's transform list equals nnU-Net's (kinds, order, apply probabilities, constructor args).
* ``run_pipeline``: shapes, dtypes, deep-supervision pyramid shapes, label sets and per-sample statistics against
  bgv2 running nnU-Net's pipeline on the same inputs; the DS pyramid is consistent with bgv2's downsampling of
  augmentd's full-resolution target; and every sample whose noise step did not fire is *replayed* through bgv2
  with the parameters augmentd reports, which must reproduce augmentd's output (1e-4 of the range / labels).
* The RNG contract: outputs do not depend on thread count or on how samples are split into batches.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace
from typing import Dict, List, Tuple

import numpy as np
import pytest
import torch
from scipy import stats

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from nnunetv2.training.nnUNetTrainer.nnUNetTrainer import nnUNetTrainer

from batchgeneratorsv2.transforms.noise.gaussian_blur import GaussianBlurTransform
from batchgeneratorsv2.transforms.utils.deep_supervision_downsampling import DownsampleSegForDSTransform
from batchgeneratorsv2.transforms.utils.pseudo2d import Convert2DTo3DTransform, Convert3DTo2DTransform
from batchgeneratorsv2.transforms.utils.random import RandomTransform

from bgv2_ref import (INSTALLED_BGV2, KIND_TO_CLASS, TIE_LEDGER, assert_float_parity, compare_labels, make_image,
                      make_seg, params_from_json, seed_all, to_jsonable)

CLASS_TO_KIND = {cls: kind for kind, cls in KIND_TO_CLASS.items()}


# --------------------------------------------------------------------------------------------------------------
# nnU-Net's own trainer code, called on a minimal stand-in for `self`
# --------------------------------------------------------------------------------------------------------------

def nnunet_geometry(patch_size) -> Tuple[tuple, bool, np.ndarray, tuple]:
    fake = SimpleNamespace(configuration_manager=SimpleNamespace(patch_size=list(patch_size)),
                           print_to_log_file=lambda *a, **k: None)
    return nnUNetTrainer.configure_rotation_dummyDA_mirroring_and_inital_patch_size(fake)


def nnunet_ds_scales(strides) -> List[List[float]]:
    fake = SimpleNamespace(enable_deep_supervision=True,
                           configuration_manager=SimpleNamespace(pool_op_kernel_sizes=strides))
    return nnUNetTrainer._get_deep_supervision_scales(fake)


def nnunet_transforms(case: dict):
    rot, dummy, _, mirror = nnunet_geometry(case["patch_size"])
    return nnUNetTrainer.get_training_transforms(
        case["patch_size"], rot, nnunet_ds_scales(case["strides"]), mirror, dummy,
        use_mask_for_norm=case.get("use_mask_for_norm"), is_cascaded=False, foreground_labels=None,
        regions=case.get("regions"), ignore_label=case.get("ignore_label"))


def trainer_config(case: dict) -> dict:
    tc = {"patch_size": list(case["patch_size"]), "pool_op_kernel_sizes": case["strides"],
          "num_input_channels": case["channels"], "bgv2_version": INSTALLED_BGV2}
    if case.get("use_mask_for_norm") is not None:
        tc["use_mask_for_norm"] = case["use_mask_for_norm"]
    if case.get("regions") is not None:
        tc["regions"] = [list(r) if isinstance(r, (list, tuple)) else [r] for r in case["regions"]]
    if case.get("ignore_label") is not None:
        tc["ignore_label"] = case["ignore_label"]
    return tc


# --------------------------------------------------------------------------------------------------------------
# initial_patch_size
# --------------------------------------------------------------------------------------------------------------

PATCH_SIZES = [
    (128, 128, 128), (96, 160, 160), (80, 192, 160), (64, 192, 192), (20, 320, 256),  # reference §2.2
    (56, 168, 168),   # max/p0 == 3 exactly: not dummy-2D (strict >)
    (48, 160, 160),   # 3.33: dummy-2D
    (40, 56, 40), (24, 32, 28), (6, 40, 32), (1, 1, 1),
    (512, 512), (256, 96), (160, 192),  # 2D configurations (±15° if max/min > 1.5, else ±180°)
]


@pytest.mark.parametrize("patch_size", PATCH_SIZES, ids=lambda p: "x".join(map(str, p)))
def test_initial_patch_size_matches_nnunet(capi, patch_size):
    rot, dummy, init, mirror = nnunet_geometry(patch_size)
    j, _ = capi.run({"op": "initial_patch_size", "trainer_config": {"patch_size": list(patch_size)}})
    assert list(j["initial_patch_size"]) == [int(x) for x in init], f"nnU-Net: {list(init)}, augmentd: {j}"
    assert bool(j["do_dummy_2d_data_aug"]) == bool(dummy)
    np.testing.assert_allclose(j["rotation_for_da"], rot, rtol=0, atol=1e-12)
    assert tuple(j["mirror_axes"]) == tuple(mirror)


def test_initial_patch_size_reference_table(capi):
    """The computed examples of reference §2.2 (a fixed expectation, independent of nnU-Net's code)."""
    table = {(128, 128, 128): (205, 205, 205), (96, 160, 160): (191, 257, 219), (80, 192, 160): (194, 289, 210),
             (64, 192, 192): (178, 308, 233), (20, 320, 256): (20, 376, 376)}
    for p, want in table.items():
        j, _ = capi.run({"op": "initial_patch_size", "trainer_config": {"patch_size": list(p)}})
        assert tuple(j["initial_patch_size"]) == want, f"{p}: {j['initial_patch_size']} != {want}"


# --------------------------------------------------------------------------------------------------------------
# Pipeline cases (small patches so that bgv2 runs quickly)
# --------------------------------------------------------------------------------------------------------------

CASES: Dict[str, dict] = {
    "3d_2ch_mask": dict(patch_size=(24, 32, 28), channels=2, n_labels=4, use_mask_for_norm=[True, False],
                        strides=[[1, 1, 1], [2, 2, 2], [2, 2, 2], [2, 2, 2]]),
    "dummy2d": dict(patch_size=(6, 40, 32), channels=1, n_labels=3,
                    strides=[[1, 1, 1], [1, 2, 2], [1, 2, 2], [2, 2, 2]]),
    "regions_ignore": dict(patch_size=(20, 20, 20), channels=1, n_labels=4, regions=[[1, 2, 3], [2, 3], [3]],
                           ignore_label=4, strides=[[1, 1, 1], [2, 2, 2], [2, 2, 2]]),
}
B = 48
SEED = 4242


def _case_inputs(case: dict, seed: int, b: int = B) -> Tuple[np.ndarray, np.ndarray]:
    _, _, init, _ = nnunet_geometry(case["patch_size"])
    shape = tuple(int(x) for x in init)
    rng = np.random.default_rng(seed)
    imgs = np.stack([make_image(rng, case["channels"], shape) for _ in range(b)])
    segs = np.stack([make_seg(rng, shape, case["n_labels"], ignore_label=case.get("ignore_label"))
                     for _ in range(b)])
    return imgs, segs


_RUN_CACHE: Dict[str, tuple] = {}


def _augmentd_run(capi, name: str, threads: int = 2, first: int = 0, imgs=None, segs=None):
    case = CASES[name]
    if imgs is None:
        imgs, segs = _case_inputs(case, SEED)
    req = {"op": "run_pipeline", "preset": "nnunet_default", "trainer_config": trainer_config(case),
           "seed": SEED, "first_sample_index": first, "threads": threads}
    j, out = capi.run(req, image=imgs, seg=segs)
    return j, out


def _augmentd(capi, name: str):
    if name not in _RUN_CACHE:
        _RUN_CACHE[name] = _augmentd_run(capi, name)
    return _RUN_CACHE[name]


def _pyramid(out: dict) -> List[np.ndarray]:
    keys = sorted((k for k in out if k.startswith("seg_")), key=lambda k: int(k.split("_")[1]))
    assert keys == [f"seg_{i}" for i in range(len(keys))], f"tensors {sorted(out)}"
    return [out[k] for k in keys]


_BGV2_CACHE: Dict[str, tuple] = {}


def _bgv2(name: str):
    """bgv2 running nnU-Net's pipeline on the same inputs (its own RNG): stacked image and pyramid."""
    if name not in _BGV2_CACHE:
        case = CASES[name]
        imgs, segs = _case_inputs(case, SEED)
        t = nnunet_transforms(case)
        seed_all(SEED)
        out_img, out_seg = [], []
        with torch.no_grad():
            for b in range(len(imgs)):
                dd = t(image=torch.from_numpy(imgs[b].copy()), segmentation=torch.from_numpy(segs[b].copy()))
                out_img.append(dd["image"].numpy())
                out_seg.append([s.numpy() for s in dd["segmentation"]])
        pyr = [np.stack([s[k] for s in out_seg]) for k in range(len(out_seg[0]))]
        _BGV2_CACHE[name] = (np.stack(out_img), pyr)
    return _BGV2_CACHE[name]


# --------------------------------------------------------------------------------------------------------------
# Preset structure
# --------------------------------------------------------------------------------------------------------------

def _bgv2_entries(t) -> List[Tuple[str, float, object]]:
    """(kind, apply_probability, inner transform) of nnU-Net's ComposeTransforms, without the pseudo-2D converters
    (augmentd folds them into the spatial entry's ``dummy_2d``)."""
    out = []
    for x in t.transforms:
        if isinstance(x, (Convert3DTo2DTransform, Convert2DTo3DTransform)):
            continue
        p = 1.0
        if isinstance(x, RandomTransform):
            p, x = x.apply_probability, x.transform
        out.append((CLASS_TO_KIND[type(x)], float(p), x))
    return out


def _norm(v):
    """bgv2 attribute value -> comparable JSON-ish value."""
    if hasattr(v, "contrast_range"):
        return {"bg_contrast": [float(x) for x in v.contrast_range]}
    if isinstance(v, torch.Tensor):
        return [float(x) for x in v.tolist()]
    v = to_jsonable(v) if not isinstance(v, (list, tuple)) else [_norm(x) for x in v]
    return v


@pytest.mark.parametrize("name", list(CASES))
def test_preset_matches_nnunet_transform_list(capi, name):
    case = CASES[name]
    spec, _ = capi.run({"op": "preset", "preset": "nnunet_default", "trainer_config": trainer_config(case)})
    ours = spec["transforms"]
    ref = _bgv2_entries(nnunet_transforms(case))
    assert [t["kind"] for t in ours] == [k for k, _, _ in ref], "transform order differs from nnU-Net's"
    _, dummy, init, _ = nnunet_geometry(case["patch_size"])
    assert list(spec["input_patch_size"]) == [int(x) for x in init]
    skip = {"benchmark"}  # performance switch only
    for t, (kind, p, bg) in zip(ours, ref):
        assert t["apply_probability"] == pytest.approx(p), f"{kind}: apply_probability {t['apply_probability']} != {p}"
        cfg = t["config"]
        if kind == "spatial":
            assert bool(cfg.get("dummy_2d", False)) == bool(dummy)
        for attr, val in vars(bg).items():
            if attr.startswith("_") or attr in skip or attr in ("upmodes", "benchmark_use_fft",
                                                               "benchmark_num_runs"):
                continue
            if kind == "convert_segmentation_to_regions" and attr == "regions":
                want = [[int(x) for x in r.tolist()] for r in val]
                got = [r if isinstance(r, list) else [r] for r in cfg["regions"]]
                assert got == want, f"regions {got} != {want}"
                continue
            assert attr in cfg, f"{kind}: config lacks bgv2 attribute {attr!r} (= {val!r})"
            want, got = _norm(val), cfg[attr]
            if attr == "patch_center_dist_from_border":  # a single value broadcasts (bgv2 does it in __init__)
                got = got * len(want) if isinstance(got, list) and len(got) == 1 else got
            if isinstance(want, (list, float, int)) and not isinstance(want, bool) and want is not None:
                np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float),
                                           rtol=0, atol=1e-12, err_msg=f"{kind}.{attr}")
            else:
                assert got == want, f"{kind}.{attr}: augmentd {got!r} != nnU-Net {want!r}"


# --------------------------------------------------------------------------------------------------------------
# run_pipeline vs nnU-Net's pipeline
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(CASES))
def test_pipeline_shapes_dtypes_and_pyramid(capi, name):
    j, out = _augmentd(capi, name)
    ref_img, ref_pyr = _bgv2(name)
    assert out["image"].dtype == ref_img.dtype == np.float32
    assert out["image"].shape == ref_img.shape
    pyr = _pyramid(out)
    assert len(pyr) == len(ref_pyr), f"{len(pyr)} DS levels, nnU-Net {len(ref_pyr)}"
    for k, (o, r) in enumerate(zip(pyr, ref_pyr)):
        assert o.shape == r.shape, f"level {k}: {o.shape} != nnU-Net {r.shape}"
        assert o.dtype == r.dtype, f"level {k}: {o.dtype} != nnU-Net {r.dtype}"
    assert isinstance(j, dict) and len(j["samples"]) == B
    assert [s["sample_index"] for s in j["samples"]] == list(range(B))


@pytest.mark.parametrize("name", list(CASES))
def test_pipeline_label_sets(capi, name):
    case = CASES[name]
    _, out = _augmentd(capi, name)
    _, ref_pyr = _bgv2(name)
    for k, (o, r) in enumerate(zip(_pyramid(out), ref_pyr)):
        if o.dtype == np.bool_:
            assert set(np.unique(o)) == set(np.unique(r)) == {False, True}
            continue
        allowed = set(range(case["n_labels"])) | ({case["ignore_label"]} if case.get("ignore_label") else set())
        got, want = set(np.unique(o).tolist()), set(np.unique(r).tolist())
        assert -1 not in got, f"level {k}: −1 left in the target (RemoveLabel −1 → 0)"
        assert got <= allowed, f"level {k}: labels {got} not within {allowed}"
        assert got == want, f"level {k}: label set {got} != nnU-Net's {want}"


@pytest.mark.parametrize("name", list(CASES))
def test_pipeline_ds_pyramid_is_nearest_exact_of_level0(capi, name):
    _, out = _augmentd(capi, name)
    pyr = _pyramid(out)
    ds = DownsampleSegForDSTransform(ds_scales=nnunet_ds_scales(CASES[name]["strides"]))
    for b in range(B):
        ref = ds._apply_to_segmentation(torch.from_numpy(pyr[0][b].copy()))
        for k in range(1, len(pyr)):
            np.testing.assert_array_equal(pyr[k][b], ref[k].numpy(), err_msg=f"sample {b} DS level {k}")


def _sample_stats(img: np.ndarray, pyr: List[np.ndarray]) -> Dict[str, np.ndarray]:
    seg0 = pyr[0]
    fg = (seg0 != 0).reshape(seg0.shape[0], -1).mean(1) if seg0.dtype != np.bool_ else \
        seg0[:, 0].reshape(seg0.shape[0], -1).mean(1)
    return {"image std (ch 0)": img[:, 0].reshape(img.shape[0], -1).std(1),
            "image mean (ch 0)": img[:, 0].reshape(img.shape[0], -1).mean(1),
            "foreground fraction": fg}


@pytest.mark.parametrize("name", list(CASES))
def test_pipeline_statistics_match_nnunet(capi, name):
    """Per-sample summary statistics of augmentd's batch vs bgv2's on the same inputs (independent RNGs)."""
    _, out = _augmentd(capi, name)
    ref_img, ref_pyr = _bgv2(name)
    ours, ref = _sample_stats(out["image"], _pyramid(out)), _sample_stats(ref_img, ref_pyr)
    for k in ours:
        p = stats.ks_2samp(ours[k], ref[k]).pvalue
        assert p > 0.01, f"{k}: KS p={p:.3g}; augmentd {np.round(ours[k][:8], 4)}..., bgv2 {np.round(ref[k][:8], 4)}"


def _replay(case: dict, transforms_json: List[dict], image: np.ndarray, seg: np.ndarray):
    """Runs nnU-Net's bgv2 pipeline on one sample with augmentd's reported parameters."""
    entries = _bgv2_entries(nnunet_transforms(case))
    assert [t["kind"] for t in transforms_json] == [k for k, _, _ in entries]
    _, dummy, _, _ = nnunet_geometry(case["patch_size"])
    dd = {"image": torch.from_numpy(image.copy()), "segmentation": torch.from_numpy(seg.copy())}
    with torch.no_grad():
        for tj, (kind, _, bg) in zip(transforms_json, entries):
            if not tj["applied"]:
                continue
            if isinstance(bg, GaussianBlurTransform):
                bg.benchmark = False  # deterministic direct convolution (FFT vs direct only differs in rounding)
            if kind == "spatial" and dummy:
                dd = Convert3DTo2DTransform()(**dd)
            params = params_from_json(kind, bg, tj["params"], tuple(dd["image"].shape))
            dd = bg.apply(dd, **params)
            if kind == "spatial" and dummy:
                dd = Convert2DTo3DTransform()(**dd)
    seg_out = dd["segmentation"]
    return dd["image"].numpy(), [s.numpy() for s in (seg_out if isinstance(seg_out, list) else [seg_out])]


@pytest.mark.parametrize("name", list(CASES))
def test_pipeline_replay_parity(capi, name):
    """Each sample without Gaussian noise (its field cannot be replayed) is re-run through bgv2 with augmentd's
    reported parameters: the image must match to 1e-4 of the range, labels exactly up to fp16 ties (≤ 1e-6 of
    the voxels over the batch, at least one voxel allowed)."""
    case = CASES[name]
    imgs, segs = _case_inputs(case, SEED)
    j, out = _augmentd(capi, name)
    pyr = _pyramid(out)
    replayed, mismatch, voxels = 0, 0, 0
    applied_kinds = set()
    for b, sample in enumerate(j["samples"]):
        tj = sample["transforms"]
        if any(t["kind"] == "gaussian_noise" and t["applied"] for t in tj):
            continue
        applied_kinds |= {t["kind"] for t in tj if t["applied"]}
        img, segl = _replay(case, tj, imgs[b], segs[b])
        assert_float_parity(out["image"][b], img, what=f"sample {b} image (applied: "
                                                        f"{[t['kind'] for t in tj if t['applied']]})")
        for k, s in enumerate(segl):
            rep = compare_labels(pyr[k][b], s)
            mismatch += rep.n_mismatch
            voxels += rep.n_voxels
            assert rep.fraction <= 1e-3, f"sample {b} level {k}: {rep}"
        replayed += 1
    TIE_LEDGER["voxels"] += voxels
    TIE_LEDGER["mismatch"] += mismatch
    assert replayed >= B // 2
    assert mismatch <= max(1, 1e-6 * voxels), f"{mismatch} label voxels differ out of {voxels}"
    # the batch must have exercised the random transforms
    for kind in ("gaussian_blur", "multiplicative_brightness", "contrast", "simulate_low_resolution", "gamma",
                 "mirror", "spatial"):
        assert kind in applied_kinds, f"no replayed sample applied {kind}; pick a larger batch"


# --------------------------------------------------------------------------------------------------------------
# Validation pipeline (deterministic): bit-identical to nnU-Net's get_validation_transforms
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(CASES))
def test_validation_pipeline_matches_nnunet(capi, name):
    case = CASES[name]
    rng = np.random.default_rng(90)
    shape = tuple(case["patch_size"])  # the validation loader crops patch_size directly
    imgs = np.stack([make_image(rng, case["channels"], shape) for _ in range(3)])
    segs = np.stack([make_seg(rng, shape, case["n_labels"], ignore_label=case.get("ignore_label"))
                     for _ in range(3)])
    t = nnUNetTrainer.get_validation_transforms(nnunet_ds_scales(case["strides"]), is_cascaded=False,
                                                foreground_labels=None, regions=case.get("regions"),
                                                ignore_label=case.get("ignore_label"))
    req = {"op": "run_pipeline", "preset": "nnunet_validation", "trainer_config": trainer_config(case),
           "seed": 1, "first_sample_index": 0, "threads": 1}
    _, out = capi.run(req, image=imgs, seg=segs)
    pyr = _pyramid(out)
    for b in range(3):
        dd = t(image=torch.from_numpy(imgs[b].copy()), segmentation=torch.from_numpy(segs[b].copy()))
        # exact on every CPU: no random transform, so only copies, −1 → 0 and nearest-exact index picks
        np.testing.assert_array_equal(out["image"][b], dd["image"].numpy())
        ref = dd["segmentation"]
        assert len(pyr) == len(ref)
        for k, r in enumerate(ref):
            assert pyr[k].dtype == r.numpy().dtype, f"level {k}: {pyr[k].dtype} != {r.numpy().dtype}"
            np.testing.assert_array_equal(pyr[k][b], r.numpy(), err_msg=f"sample {b} level {k}")


# --------------------------------------------------------------------------------------------------------------
# Determinism: thread count and batch split do not change a sample
# --------------------------------------------------------------------------------------------------------------

def test_pipeline_independent_of_threads_and_batch_split(capi):
    name = "3d_2ch_mask"
    case = CASES[name]
    imgs, segs = _case_inputs(case, SEED, b=8)
    j1, o1 = _augmentd_run(capi, name, threads=1, imgs=imgs, segs=segs)
    j2, o2 = _augmentd_run(capi, name, threads=2, imgs=imgs, segs=segs)
    for k in o1:
        np.testing.assert_array_equal(o1[k], o2[k], err_msg=f"{k}: threads 1 vs 2")
    assert j1["samples"] == j2["samples"]
    j3, o3 = _augmentd_run(capi, name, threads=2, first=4, imgs=imgs[4:], segs=segs[4:])
    for k in o1:
        np.testing.assert_array_equal(o1[k][4:], o3[k], err_msg=f"{k}: samples 4..7 alone vs in the batch")
    assert j1["samples"][4:] == j3["samples"]
    j4, o4 = _augmentd_run(capi, name, threads=2, first=100, imgs=imgs, segs=segs)
    assert not np.array_equal(o1["image"], o4["image"]), "other sample indices must give other augmentations"


# --------------------------------------------------------------------------------------------------------------
# Per-sample streams inside a batch: apply decisions and noise fields
# --------------------------------------------------------------------------------------------------------------

def test_pipeline_apply_frequencies_and_independence(capi):
    """4000 tiny samples through ``nnunet_default``: every transform fires with nnU-Net's probability, the
    integer-crop shortcut happens in (1 − 0.2)² of the samples, and decisions of different transforms are
    independent (each transform has its own stream)."""
    case = dict(patch_size=(4, 4, 4), channels=2, n_labels=2, strides=[[1, 1, 1], [2, 2, 2]])
    n = 4000
    _, _, init, _ = nnunet_geometry(case["patch_size"])
    rng = np.random.default_rng(77)
    imgs = rng.standard_normal((n, 2, *init)).astype(np.float32) + 0.1
    segs = rng.integers(0, 2, size=(n, 1, *init)).astype(np.int16)
    req = {"op": "run_pipeline", "preset": "nnunet_default", "trainer_config": trainer_config(case), "seed": 5,
           "first_sample_index": 0, "threads": 2}
    j, _ = capi.run(req, image=imgs, seg=segs)
    entries = _bgv2_entries(nnunet_transforms(case))
    flags = np.array([[t["applied"] for t in s["transforms"]] for s in j["samples"]])
    assert flags.shape == (n, len(entries))
    for i, (kind, p, _) in enumerate(entries):
        k = int(flags[:, i].sum())
        if p in (0.0, 1.0):
            assert k == n * p, f"{kind}: applied {k}/{n}, p = {p}"
        else:
            pv = stats.binomtest(k, n, p).pvalue
            assert pv > 0.01, f"transform {i} ({kind}): applied {k}/{n}, expected p={p} (binomial p={pv:.3g})"
    crop = sum(s["transforms"][0]["params"]["affine"] is None for s in j["samples"])
    assert stats.binomtest(crop, n, 0.64).pvalue > 0.01, f"integer-crop shortcut in {crop}/{n}, expected 0.64"
    random_cols = [i for i, (_, p, _) in enumerate(entries) if 0 < p < 1]
    for a, b in zip(random_cols, random_cols[1:]):
        table = np.array([[np.sum(~flags[:, a] & ~flags[:, b]), np.sum(~flags[:, a] & flags[:, b])],
                          [np.sum(flags[:, a] & ~flags[:, b]), np.sum(flags[:, a] & flags[:, b])]])
        pv = stats.chi2_contingency(table).pvalue
        assert pv > 0.01, f"apply decisions of transforms {a} and {b} are dependent: {table.tolist()} (p={pv:.3g})"


NOISE_ONLY = {"transforms": [{"kind": "gaussian_noise", "apply_probability": 1.0,
                              "config": {"noise_variance": [0.05, 0.05], "p_per_channel": 1,
                                         "synchronize_channels": True}}]}


def _noise_fields(capi, imgs, injected=None):
    req = {"op": "run_pipeline", "pipeline": NOISE_ONLY, "seed": 11, "first_sample_index": 0, "threads": 2}
    if injected is not None:
        req["params"] = injected
    segs = np.zeros((imgs.shape[0], 1, *imgs.shape[2:]), np.int16)
    _, out = capi.run(req, image=imgs, seg=segs)
    return (out["image"].astype(np.float64) - imgs) / 0.05


def _assert_independent_standard_normal(z: np.ndarray, what: str):
    fields = z.reshape(-1, z[0, 0].size)
    for i, f in enumerate(fields):
        p = stats.kstest(f, "norm").pvalue
        assert p > 0.01, f"{what}: field {i} not N(0,1): KS p={p:.3g}, mean {f.mean():.4f}, std {f.std():.4f}"
    corr = np.corrcoef(fields)
    off = np.abs(corr[~np.eye(len(fields), dtype=bool)])
    assert off.max() < 5 / np.sqrt(fields.shape[1]), \
        f"{what}: noise fields of different samples/channels are correlated (max |r| = {off.max():.3f})"


def test_pipeline_noise_fields_are_fresh_per_sample_and_channel(capi):
    """σ fixed at 0.05: (out − in)/σ is N(0,1) for every sample and channel, and no two fields are correlated."""
    imgs = make_image(np.random.default_rng(12), 3, (14, 16, 18))[None].repeat(4, 0)
    _assert_independent_standard_normal(_noise_fields(capi, imgs), "drawn")


def test_pipeline_injected_noise_params_still_draw_fresh_fields(capi):
    """Injecting bgv2's noise params (which hold σ, not the field) must behave like bgv2: a fresh field per
    sample. (augmentd's optional ``noise_key`` pins a field for replay; without it the sample's own stream
    should be used.)"""
    imgs = make_image(np.random.default_rng(13), 2, (14, 16, 18))[None].repeat(4, 0)
    inj = [[{"applied": True, "params": {"apply_mask": [True, True], "apply_idx": [0, 1], "num_apply": 2,
                                         "sigmas": 0.05}}] for _ in range(4)]
    _assert_independent_standard_normal(_noise_fields(capi, imgs, inj), "injected without noise_key")
