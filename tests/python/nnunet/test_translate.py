"""The translation of nnU-Net trainers' own batchgeneratorsv2 pipelines (augmentd.nnunet.translate / check).

* every trainer class under nnunetv2/training/nnUNetTrainer/variants/ is translated or refused with a reason;
* preset == translation: the engine's expansion of ``nnunet_default`` / ``nnunet_da5`` / ``nnunet_validation``
  (augment/capi.h ``preset``) equals the translated list as the engine parses it (``run_pipeline``), for 3D, 2D,
  dummy-2D, regions + ignore label and use_mask_for_norm configurations, and the preset's crop equals the trainer's;
* what cannot be expressed is refused naming the bgv2 class and attribute;
* the wire form (TransformSpec) carries every parameter.
"""
from __future__ import annotations

import copy
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("nnunetv2")
from batchgeneratorsv2.transforms.intensity.contrast import BGContrast  # noqa: E402
from batchgeneratorsv2.transforms.intensity.gamma import GammaTransform  # noqa: E402
from batchgeneratorsv2.transforms.nnunet.random_binary_operator import ApplyRandomBinaryOperatorTransform  # noqa: E402
from batchgeneratorsv2.transforms.spatial.spatial import SpatialTransform  # noqa: E402
from batchgeneratorsv2.transforms.utils.compose import ComposeTransforms  # noqa: E402
from batchgeneratorsv2.transforms.utils.random import OneOfTransform, RandomTransform  # noqa: E402

from augmentd.nnunet.check import check_trainer, example_plans, variant_classes, walk_variants  # noqa: E402
from augmentd.nnunet.translate import Untranslatable, translate_transforms  # noqa: E402
from augmentd.v1 import pipeline_pb2  # noqa: E402
from augmentd_server import client_env  # noqa: E402

# What the issue requires to translate (by family), and the one class that cannot be served (no data loading).
MUST_TRANSLATE = ("nnUNetTrainerNoDA", "nnUNetTrainer_DASegOrd0", "nnUNetTrainerNoMirroring", "nnUNetTrainerDA5",
                  "nnUNetTrainerDA5ord0", "nnUNetTrainer_250epochs", "nnUNetTrainer_5epochs",
                  "nnUNetTrainer_250epochs_NoMirroring", "nnUNetTrainerCELoss", "nnUNetTrainerDiceLoss",
                  "nnUNetTrainerTopk10Loss", "nnUNetTrainerAdam", "nnUNetTrainerAdan", "nnUNetTrainerCosAnneal",
                  "nnUNetTrainer_warmup", "nnUNetTrainerBN", "nnUNetTrainerNoDeepSupervision",
                  "nnUNetTrainer_probabilisticOversampling", "nnUNetTrainer_noDummy2DDA")
REFUSED = {"nnUNetTrainerBenchmark_5epochs_noDataLoading": "get_dataloaders is overridden"}


@pytest.fixture(scope="module")
def variants():
    return walk_variants()


def test_every_variant_is_translated_or_refused_with_a_reason(variants):
    names = [r.trainer for r in variants]
    assert len(names) == len(set(names)) == len(variant_classes()) >= 50, names
    for r in variants:
        if r.ok:
            assert r.translation.train.entries and r.translation.val.entries, r.trainer
            assert len(r.translation.train.protos()) == len(r.translation.train.entries)
        else:
            assert r.trainer in REFUSED and REFUSED[r.trainer] in r.reason, (r.trainer, r.reason)
    ok = {r.trainer for r in variants if r.ok}
    assert set(MUST_TRANSLATE) <= ok, sorted(set(MUST_TRANSLATE) - ok)
    assert {r.trainer for r in variants if not r.ok} == set(REFUSED)


def test_translations_follow_the_classes_own_overrides(variants):
    by = {r.trainer: r.translation for r in variants if r.ok}
    kinds = lambda t: [e.kind for e in t.train.entries]  # noqa: E731
    assert "mirror" not in kinds(by["nnUNetTrainerNoMirroring"]) and "mirror" in kinds(by["nnUNetTrainer_5epochs"])
    assert kinds(by["nnUNetTrainerNoDA"]) == ["remove_label", "downsample_seg_for_ds"]
    assert by["nnUNetTrainerNoDA"].initial_patch_size == by["nnUNetTrainerNoDA"].patch_size
    assert by["nnUNetTrainerNoDA"].train_preset == pipeline_pb2.PRESET_NNUNET_VALIDATION
    assert "downsample_seg_for_ds" not in kinds(by["nnUNetTrainerNoDeepSupervision"])
    spatial = by["nnUNetTrainer_DASegOrd0"].train.entries[0]
    assert spatial.kind == "spatial" and spatial.config["mode_seg"] == "nearest"
    assert by["nnUNetTrainer_DASegOrd0"].train_preset == pipeline_pb2.PRESET_UNSPECIFIED  # explicit list
    da5ord0 = by["nnUNetTrainerDA5ord0"].train.entries[0].config
    assert (da5ord0["mode_image"], da5ord0["mode_seg"]) == ("nearest", "nearest")
    assert [e.one_of_group for e in by["nnUNetTrainerDA5"].train.entries].count(1) == 2
    mirror = [e for e in by["nnUNetTrainer_onlyMirror01"].train.entries if e.kind == "mirror"][0]
    assert mirror.config["allowed_axes"] == [0, 1]
    assert by["nnUNetTrainerDA5"].train_preset == pipeline_pb2.PRESET_NNUNET_DA5
    assert by["nnUNetTrainer_250epochs"].train_preset == pipeline_pb2.PRESET_NNUNET_DEFAULT


# -- preset == translation (the engine's own expansion) -------------------------------------------------------------
def _trainer_config(tr) -> dict:
    (patch, rotation, ds, mirror_axes, dummy_2d), kw = tr.train_call
    cfg = {"patch_size": [int(p) for p in patch], "rotation_for_da": [float(r) for r in rotation],
           "mirror_axes": list(mirror_axes or []), "do_dummy_2d_data_aug": bool(dummy_2d),
           "num_input_channels": len(kw["use_mask_for_norm"]), "use_mask_for_norm": list(kw["use_mask_for_norm"])}
    if ds is not None:
        cfg["deep_supervision_scales"] = [[float(f) for f in s] for s in ds]
    if kw["regions"] is not None:
        cfg["regions"] = [list(r) if isinstance(r, (list, tuple)) else [r] for r in kw["regions"]]
    if kw["ignore_label"] is not None:
        cfg["ignore_label"] = kw["ignore_label"]
    return cfg


def _engine_parsed(capi, pipeline, crop, channels):
    shape = [1, channels] + list(crop)
    rng = np.random.default_rng(0)
    j, _ = capi.run({"op": "run_pipeline", "pipeline": pipeline.engine_json(), "seed": 0, "threads": 1},
                    image=rng.random(shape, dtype=np.float32), seg=np.zeros([1, 1] + list(crop), np.int16))
    return j["pipeline"]["transforms"]


def _plans_variant(kind: str):
    plans, dataset_json = example_plans()
    plans = copy.deepcopy(plans)
    configuration = "3d_fullres"
    c3 = plans["configurations"]["3d_fullres"]
    c3["patch_size"] = [48, 56, 64]
    if kind == "2d":
        configuration = "2d"
        plans["configurations"]["2d"]["patch_size"] = [64, 80]
    elif kind == "dummy_2d":
        c3["patch_size"] = [12, 64, 80]  # max / first > 3: nnU-Net's dummy-2D augmentation
    elif kind == "regions_mask":
        dataset_json = dict(dataset_json, channel_names={"0": "CT", "1": "MR"},
                            labels={"background": 0, "ab": [1, 2], "b": 2, "ignore": 3}, regions_class_order=[1, 2])
        for c in plans["configurations"].values():
            c["use_mask_for_norm"] = [True, False]
            c["normalization_schemes"] = ["ZScoreNormalization"] * 2
        plans["foreground_intensity_properties_per_channel"]["1"] = \
            plans["foreground_intensity_properties_per_channel"]["0"]
    for c in plans["configurations"].values():
        c["architecture"]["arch_kwargs"]["n_stages"] = 4
        for k in ("features_per_stage", "kernel_sizes", "strides", "n_conv_per_stage"):
            c["architecture"]["arch_kwargs"][k] = c["architecture"]["arch_kwargs"][k][:4]
        c["architecture"]["arch_kwargs"]["n_conv_per_stage_decoder"] = [2, 2, 2]
    return plans, dataset_json, configuration


@pytest.mark.parametrize("kind", ["3d", "2d", "dummy_2d", "regions_mask"])
@pytest.mark.parametrize("trainer, preset", [("nnUNetTrainer", "nnunet_default"), ("nnUNetTrainerDA5", "nnunet_da5")])
def test_preset_equals_translation(capi, kind, trainer, preset):
    plans, dataset_json, configuration = _plans_variant(kind)
    r = check_trainer(trainer, configuration=configuration, plans=plans, dataset_json=dataset_json)
    assert r.ok, r.reason
    tr = r.translation
    assert tr.train_preset == pipeline_pb2.Preset.Value("PRESET_" + preset.upper())
    assert tr.val_preset == pipeline_pb2.PRESET_NNUNET_VALIDATION
    cfg = _trainer_config(tr)
    channels = cfg["num_input_channels"]
    for name, pipe, crop in ((preset, tr.train, tr.initial_patch_size), ("nnunet_validation", tr.val, tr.patch_size)):
        ref, _ = capi.run({"op": "preset", "preset": name, "trainer_config": cfg})
        assert ref["input_patch_size"] == crop, (name, ref["input_patch_size"], crop)
        ours = _engine_parsed(capi, pipe, crop, channels)
        assert [t["kind"] for t in ours] == [t["kind"] for t in ref["transforms"]], name
        for a, b in zip(ours, ref["transforms"]):
            assert a == b, (name, a, b)
    kinds = [e.kind for e in tr.train.entries]
    if kind == "regions_mask":
        assert "mask_image" in kinds and "convert_segmentation_to_regions" in kinds
        regions = [e for e in tr.train.entries if e.kind == "convert_segmentation_to_regions"][0]
        assert regions.config["regions"] == [[1, 2], [2], [3]]  # the ignore label is the last region
    if kind == "dummy_2d":
        assert tr.train.entries[0].config["dummy_2d"] and len(tr.train.entries[0].config["patch_size"]) == 2


# -- refusals ------------------------------------------------------------------------------------------------------
def _spatial(**kw):
    args = dict(patch_size=(32, 32, 32), patch_center_dist_from_border=0, random_crop=False)
    args.update(kw)
    return SpatialTransform(**args)


class _MyGamma(GammaTransform):
    pass


@pytest.mark.parametrize("pipeline, message", [
    (ComposeTransforms([_spatial(rotation=lambda: 0.1)]),
     r"\[0\] SpatialTransform\.rotation=.*<lambda>: a sampling function cannot be sent"),
    (ComposeTransforms([_spatial(align_corners=True)]), r"SpatialTransform\.align_corners=True"),
    (ComposeTransforms([_spatial(mode_seg="bicubic")]), r"SpatialTransform\.mode_seg='bicubic'"),
    (ComposeTransforms([RandomTransform(_MyGamma(BGContrast((0.7, 1.5)), 0, False, 1, 1), 0.3)]),
     r"RandomTransform\(p=0.3\) > _MyGamma .*a subclass of batchgeneratorsv2\.transforms\.intensity\.gamma\."
     r"GammaTransform"),
    (ComposeTransforms([GammaTransform(BGContrast(lambda: 1.0), 0, False, 1, 1)]),
     r"GammaTransform\.gamma=BGContrast\(.*a callable contrast_range"),
    (ComposeTransforms([ApplyRandomBinaryOperatorTransform([-1], any_of_these=(np.logical_not,))]),
     r"ApplyRandomBinaryOperatorTransform\.any_of_these\[0\]=.*logical_not"),
    (ComposeTransforms([OneOfTransform([OneOfTransform([_spatial()]), _spatial()])]), r"nested OneOfTransform"),
    (ComposeTransforms([RandomTransform(ComposeTransforms([_spatial()]), 0.5)]),
     r"ComposeTransforms inside RandomTransform"),
])
def test_inexpressible_pipelines_name_class_and_attribute(pipeline, message):
    with pytest.raises(Untranslatable, match=message):
        translate_transforms(pipeline, 3, "T.get_training_transforms")


def test_unknown_attribute_of_a_newer_bgv2_is_refused():
    t = GammaTransform(BGContrast((0.7, 1.5)), 0, False, 1, 1)
    t.seg_tiebreak = "lowest"  # a parameter this translator does not know
    with pytest.raises(Untranslatable, match=r"GammaTransform\.seg_tiebreak: attribute unknown"):
        translate_transforms(ComposeTransforms([t]), 3)


def test_seg_tiebreak_of_bgv2_036_reaches_the_proto():
    # bgv2 0.3.6's SpatialTransform.seg_tiebreak (the venv may hold 0.3.5: the attribute is set by hand there)
    # travels to SpatialParams.seg_tiebreak; a 0.3.5 object without it leaves the field unset (the engine's default).
    t = _spatial()
    plain = translate_transforms(ComposeTransforms([t]), 3)
    if not hasattr(t, "seg_tiebreak"):
        assert "seg_tiebreak" not in plain.entries[0].config
        assert not plain.protos()[0].spatial.HasField("seg_tiebreak")
    t.seg_tiebreak = "highest"
    tr = translate_transforms(ComposeTransforms([t]), 3)
    assert tr.entries[0].config["seg_tiebreak"] == "highest"
    spec = tr.protos()[0]
    assert spec.spatial.HasField("seg_tiebreak") and spec.spatial.seg_tiebreak == "highest"


def test_cascade_configuration_translates(nnunet_env, capi):
    import json

    plans = json.loads((nnunet_env["preprocessed"] / "nnUNetPlans.json").read_text())
    full = plans["configurations"]["3d_fullres"]
    plans["configurations"]["3d_lowres"] = dict(copy.deepcopy(full), data_identifier="nnUNetPlans_3d_lowres",
                                                next_stage="3d_cascade_fullres")
    plans["configurations"]["3d_cascade_fullres"] = {"inherits_from": "3d_fullres", "previous_stage": "3d_lowres"}
    dataset_json = json.loads((nnunet_env["preprocessed"] / "dataset.json").read_text())
    r = check_trainer("nnUNetTrainer", configuration="3d_cascade_fullres", plans=plans, dataset_json=dataset_json)
    assert r.ok, r.reason
    fg = [int(v) for v in r.translation.train_call[1]["foreground_labels"]]
    k = len(fg)
    by_kind = {e.kind: e for e in r.translation.train.entries}
    # nnU-Net 2.8.1's get_training_transforms(is_cascaded=True), parameters as nnU-Net sets them
    move = by_kind["move_seg_as_one_hot_to_data"]
    assert move.config == {"source_channel_idx": 1, "all_labels": fg, "remove_channel_from_source": True}
    assert move.apply_probability == 1
    binop = by_kind["apply_random_binary_operator"]
    assert binop.apply_probability == 0.4
    assert sorted(binop.config["channel_idx"]) == list(range(-k, 0)) and binop.config["strel_size"] == [1, 8]
    assert binop.config["p_per_label"] == 0.5
    assert binop.config["any_of_these"] == ["dilation", "erosion", "closing", "opening"]
    cc = by_kind["remove_random_connected_component"]
    assert cc.apply_probability == 0.2
    assert cc.config["fill_with_other_class_p"] == 0 and cc.config["dont_do_if_covers_more_than_x_percent"] == 0.15
    kinds = [e.kind for e in r.translation.train.entries]
    assert kinds.index("remove_label") < kinds.index("move_seg_as_one_hot_to_data") < kinds.index(
        "apply_random_binary_operator") < kinds.index("remove_random_connected_component") < kinds.index(
        "downsample_seg_for_ds")
    assert [e.kind for e in r.translation.val.entries][:2] == ["remove_label", "move_seg_as_one_hot_to_data"]
    # never a preset (the server's presets have no cascade entries): explicit lists for both loaders
    assert r.translation.train_preset == r.translation.val_preset == pipeline_pb2.PRESET_UNSPECIFIED
    protos = r.translation.train.protos()
    assert protos[kinds.index("apply_random_binary_operator")].apply_random_binary_operator.p_per_label == 0.5
    # the engine runs the translated pipeline: two seg channels in, one-hot channels appended, one seg channel out
    rng = np.random.default_rng(0)
    shape = [int(v) for v in r.translation.patch_size]
    c = 1
    img = rng.standard_normal((2, c, *shape)).astype(np.float32)
    seg = rng.integers(0, max(fg) + 1, (2, 2, *shape)).astype(np.int16)
    val = [e.engine_json() for e in r.translation.val.entries]
    j, out = capi.run({"op": "run_pipeline", "pipeline": {"transforms": val}, "seed": 3}, image=img, seg=seg)
    assert out["image"].shape == (2, c + k, *shape), {n: a.shape for n, a in out.items()}
    for i, lab in enumerate(fg):
        np.testing.assert_array_equal(out["image"][:, c + i], (seg[:, 1] == lab).astype(np.float32))


def test_cascade_validation_pipeline_equals_nnunets(capi):
    """nnU-Net 2.8.1's get_validation_transforms(is_cascaded=True) (RemoveLabel, MoveSegAsOneHotToData, DS
    downsampling: nothing random), translated and run by the engine, equals bgv2 running nnU-Net's own objects."""
    import torch
    from nnunetv2.training.nnUNetTrainer.nnUNetTrainer import nnUNetTrainer

    ds = [[1.0, 1.0, 1.0], [0.5, 0.5, 0.5], [0.25, 0.25, 0.25]]
    t = nnUNetTrainer.get_validation_transforms(ds, is_cascaded=True, foreground_labels=[1, 2, 3], regions=None,
                                                ignore_label=None)
    pipe = translate_transforms(t, 3)
    assert [e.kind for e in pipe.entries] == ["remove_label", "move_seg_as_one_hot_to_data", "downsample_seg_for_ds"]
    rng = np.random.default_rng(11)
    shape = (16, 20, 24)
    img = rng.standard_normal((2, *shape)).astype(np.float32)
    seg = rng.integers(-1, 4, (2, *shape)).astype(np.int16)
    with torch.no_grad():
        ref = t(image=torch.from_numpy(img.copy()), segmentation=torch.from_numpy(seg.copy()))
    _, out = capi.run({"op": "run_pipeline", "pipeline": pipe.engine_json(), "seed": 0}, image=img[None],
                      seg=seg[None])
    np.testing.assert_array_equal(out["image"][0], ref["image"].numpy())
    for i, r in enumerate(ref["segmentation"]):
        np.testing.assert_array_equal(out[f"seg_{i}"][0], r.numpy())


# -- wire form -----------------------------------------------------------------------------------------------------
def test_wire_form_carries_every_da5_parameter():
    tr = check_trainer("nnUNetTrainerDA5").translation
    protos = tr.train.protos()
    assert [pipeline_pb2.TransformKind.Name(p.kind).lower() for p in protos] == [e.kind for e in tr.train.entries]
    by = {pipeline_pb2.TransformKind.Name(p.kind).lower(): p for p in protos}
    assert [p.one_of_group for p in protos] == [e.one_of_group for e in tr.train.entries]
    g = by["brightness_gradient_additive"].brightness_gradient_additive
    assert (g.scale.axis_size_log_uniform.low_divisor, g.scale.axis_size_log_uniform.high_divisor) == (6, 1)
    assert [(c.weight, c.range.min, c.range.max) for c in g.max_strength.mixture.components] == \
        [(0.5, -5, -1), (0.5, 1, 5)]
    b = by["blank_rectangle"].blank_rectangle
    assert b.rectangle_value.rectangle_mean and [(r.min, r.max) for r in b.rectangle_size] == [(12, 42)] * 3
    assert (b.num_rectangles.min, b.num_rectangles.max) == (1, 5)
    m = by["median_filter"].median_filter
    assert (m.filter_size.min, m.filter_size.max) == (2, 8) and m.p_per_channel == 0.5
    s = by["spatial"].spatial
    assert s.p_rot_per_axis == 0.5 and list(s.patch_size) == [128, 128, 128]
    assert s.border_mode_seg == pipeline_pb2.BORDER_MODE_CONSTANT and s.padding_value_seg == -1
    assert by["contrast"].apply_probability == pytest.approx(0.2)


# -- the check command -------------------------------------------------------------------------------------------------
def test_check_command_prints_the_table_or_the_reason(tmp_path):
    env = dict(client_env(), nnUNet_results=str(tmp_path / "results"))
    out = subprocess.run([sys.executable, "-m", "augmentd", "nnunet", "check", "-tr", "nnUNetTrainerNoMirroring"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "nnUNetTrainerNoMirroring: translated" in out.stdout and "MirrorTransform" not in out.stdout
    assert "RandomTransform(p=0.1) > GaussianNoiseTransform" in out.stdout and "preset nnunet_default" in out.stdout
    assert not os.listdir(tmp_path / "results") if (tmp_path / "results").exists() else True  # scratch folder only
    out = subprocess.run([sys.executable, "-m", "augmentd", "nnunet", "check", "-tr",
                          "nnUNetTrainerBenchmark_5epochs_noDataLoading"], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 1 and "REFUSED" in out.stdout and "get_dataloaders is overridden" in out.stdout
    out = subprocess.run([sys.executable, "-m", "augmentd", "nnunet", "check", "--help"], capture_output=True,
                         text=True, env=env, timeout=60)
    assert out.returncode == 0 and "-tr TRAINER" in out.stdout and "translation table" in out.stdout
