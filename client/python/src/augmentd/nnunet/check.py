"""``python -m augmentd nnunet check -tr TRAINER``: whether augmentd can serve a trainer class, without training.

Instantiates the class (on the CPU, its output folder in a temporary directory) for a dataset's plans
(``-d DATASET [-p PLANS] [-c CONFIGURATION]``, read from $nnUNet_preprocessed) or, without ``-d``, for a built-in
example configuration (3D, patch 128×128×128, 1 channel, labels 0..2, 6 stages; ``-c 2d``: 2D, patch 256×256),
calls its own ``get_training_transforms`` / ``get_validation_transforms`` with the arguments nnU-Net passes and
prints the translation table: bgv2 object → augmentd entry, parameters; the crop; whether the server's preset is
used (fast path) or the explicit list. A class augmentd cannot serve prints the reason (class and attribute).
Exit status 0: served; 1: refused.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import tempfile
from typing import List, Optional

from .config import UnsupportedTrainerSetting


def _arch(dim: int, n_stages: int) -> dict:
    conv = "Conv3d" if dim == 3 else "Conv2d"
    norm = "InstanceNorm3d" if dim == 3 else "InstanceNorm2d"
    return {"network_class_name": "dynamic_network_architectures.architectures.unet.PlainConvUNet",
            "arch_kwargs": {"n_stages": n_stages, "features_per_stage": [min(320, 32 * 2 ** i) for i in range(n_stages)],
                            "conv_op": f"torch.nn.modules.conv.{conv}", "kernel_sizes": [[3] * dim] * n_stages,
                            "strides": [[1] * dim] + [[2] * dim] * (n_stages - 1),
                            "n_conv_per_stage": [2] * n_stages, "n_conv_per_stage_decoder": [2] * (n_stages - 1),
                            "conv_bias": True, "norm_op": f"torch.nn.modules.instancenorm.{norm}",
                            "norm_op_kwargs": {"eps": 1e-05, "affine": True}, "dropout_op": None,
                            "dropout_op_kwargs": None, "nonlin": "torch.nn.LeakyReLU", "nonlin_kwargs": {"inplace": True}},
            "_kw_requires_import": ["conv_op", "norm_op", "dropout_op", "nonlin"]}


def example_plans() -> tuple:
    """(plans, dataset_json) of a built-in example dataset: 3d_fullres (128³, batch 2) and 2d (256², batch 12)."""
    resampling = {"resampling_fn_data": "resample_data_or_seg_to_shape",
                  "resampling_fn_seg": "resample_data_or_seg_to_shape",
                  "resampling_fn_data_kwargs": {"is_seg": False, "order": 3, "order_z": 0, "force_separate_z": None},
                  "resampling_fn_seg_kwargs": {"is_seg": True, "order": 1, "order_z": 0, "force_separate_z": None},
                  "resampling_fn_probabilities": "resample_data_or_seg_to_shape",
                  "resampling_fn_probabilities_kwargs": {"is_seg": False, "order": 1, "order_z": 0,
                                                         "force_separate_z": None}}
    common = {"preprocessor_name": "DefaultPreprocessor", "normalization_schemes": ["ZScoreNormalization"],
              "use_mask_for_norm": [False], "batch_dice": False, **resampling}
    plans = {
        "dataset_name": "Dataset000_AugmentdExample", "plans_name": "nnUNetPlans",
        "original_median_spacing_after_transp": [1.0, 1.0, 1.0], "original_median_shape_after_transp": [160, 256, 256],
        "image_reader_writer": "SimpleITKIO", "transpose_forward": [0, 1, 2], "transpose_backward": [0, 1, 2],
        "experiment_planner_used": "ExperimentPlanner", "label_manager": "LabelManager",
        "foreground_intensity_properties_per_channel": {"0": {"max": 1.0, "mean": 0.5, "median": 0.5, "min": 0.0,
                                                              "percentile_00_5": 0.0, "percentile_99_5": 1.0,
                                                              "std": 0.2}},
        "configurations": {
            "3d_fullres": {"data_identifier": "nnUNetPlans_3d_fullres", "batch_size": 2, "patch_size": [128, 128, 128],
                           "median_image_size_in_voxels": [160.0, 256.0, 256.0], "spacing": [1.0, 1.0, 1.0],
                           "architecture": _arch(3, 6), **common},
            "2d": {"data_identifier": "nnUNetPlans_2d", "batch_size": 12, "patch_size": [256, 256],
                   "median_image_size_in_voxels": [256.0, 256.0], "spacing": [1.0, 1.0],
                   "architecture": _arch(2, 7), **common}}}
    dataset_json = {"channel_names": {"0": "MR"}, "labels": {"background": 0, "a": 1, "b": 2}, "numTraining": 10,
                    "file_ending": ".nii.gz"}
    return plans, dataset_json


@contextlib.contextmanager
def _scratch_results():
    """nnUNetTrainer.__init__ creates its output folder and log under $nnUNet_results (read from the environment
    when used): point it at a temporary folder for the check."""
    old = {k: os.environ.get(k) for k in ("nnUNet_results", "nnUNet_preprocessed")}
    with tempfile.TemporaryDirectory(prefix="augmentd-check-") as tmp:
        os.environ["nnUNet_results"] = tmp
        os.environ.setdefault("nnUNet_preprocessed", tmp)
        try:
            yield tmp
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


@dataclasses.dataclass
class CheckResult:
    trainer: str
    ok: bool
    reason: str = ""
    translation: object = None   # translate.TrainerTranslation when ok
    note: str = ""               # how the check was made, where it differs from a training run

    def report(self) -> str:
        from augmentd.v1 import pipeline_pb2

        if not self.ok:
            return f"{self.trainer}: REFUSED\n  {self.reason}"
        tr = self.translation
        lines = [f"{self.trainer}: translated" + (f" ({self.note})" if self.note else "")]
        for label, pipe, preset, crop in (("train", tr.train, tr.train_preset, tr.initial_patch_size),
                                          ("val", tr.val, tr.val_preset, tr.patch_size)):
            how = (f"preset {pipeline_pb2.Preset.Name(preset).removeprefix('PRESET_').lower()} (fast path: equal to "
                   f"the translation)" if preset else "explicit list")
            lines.append(f"  {label}: crop {crop}, {len(pipe.entries)} entries, sent as {how}")
            rows = pipe.rows()
            w0 = max([len(r[0]) for r in rows] + [10])
            w1 = max([len(r[1]) for r in rows] + [8])
            lines.append(f"    {'bgv2':<{w0}}  {'augmentd':<{w1}}  parameters")
            lines += [f"    {a:<{w0}}  {b:<{w1}}  {c}" for a, b, c in rows]
            lines += [f"    (folded: {f})" for f in pipe.folded]
        return "\n".join(lines)


def check_trainer(name: str, dataset: Optional[str] = None, configuration: str = "3d_fullres",
                  plans_identifier: str = "nnUNetPlans", fold: int = 0, cls=None, plans: Optional[dict] = None,
                  dataset_json: Optional[dict] = None) -> CheckResult:
    """Whether augmentd serves trainer ``name`` (or ``cls``) on this configuration, and its translation.
    ``plans`` / ``dataset_json`` given: used instead of a dataset's (tests)."""
    import torch

    from .dynamic import SUFFIX, NotServable, augmentd_trainer, find_trainer_class
    from .translate import translate_trainer

    if name.endswith(SUFFIX):
        name = name[:-len(SUFFIX)]
    if cls is None:
        cls = find_trainer_class(name)  # nnU-Net's own RuntimeError when no such class exists
    try:
        served = augmentd_trainer(cls)
    except NotServable as err:
        return CheckResult(name, False, str(err))
    if plans is not None:
        dataset_json = dataset_json or example_plans()[1]
    elif dataset is None:
        if plans_identifier != "nnUNetPlans":
            raise ValueError(f"-p {plans_identifier}: give the dataset (-d) whose plans these are")
        plans, dataset_json = example_plans()
        if configuration not in plans["configurations"]:
            raise ValueError(f"-c {configuration}: the built-in example has {sorted(plans['configurations'])}; give "
                             f"-d DATASET for other configurations")
    else:
        from nnunetv2.utilities.dataset_name_id_conversion import maybe_convert_to_dataset_name

        if not os.environ.get("nnUNet_preprocessed"):
            raise ValueError("-d DATASET: set nnUNet_preprocessed")
        folder = os.path.join(os.environ["nnUNet_preprocessed"], maybe_convert_to_dataset_name(dataset))
        plans_file = os.path.join(folder, plans_identifier + ".json")
        if not os.path.isfile(plans_file):
            raise FileNotFoundError(f"-p {plans_identifier}: no {plans_file}")
        with open(plans_file) as f:
            plans = json.load(f)
        with open(os.path.join(folder, "dataset.json")) as f:
            dataset_json = json.load(f)
        if configuration not in plans["configurations"]:
            raise ValueError(f"-c {configuration}: {plans_file} has {sorted(plans['configurations'])}")
    plans = copy.deepcopy(plans)
    plans["continue_training"] = False  # what get_trainer_from_args adds
    with _scratch_results():
        note = ""
        with contextlib.redirect_stdout(open(os.devnull, "w")):
            try:
                trainer = served(copy.deepcopy(plans), configuration, fold, dataset_json, torch.device("cpu"))
            except Exception as err:  # e.g. nnUNetTrainerBenchmark_5epochs: "This only works on GPU"
                from nnunetv2.training.nnUNetTrainer.nnUNetTrainer import nnUNetTrainer

                trainer = served.__new__(served)
                nnUNetTrainer.__init__(trainer, plans, configuration, fold, dataset_json, torch.device("cpu"))
                note = (f"checked with nnUNetTrainer.__init__ only: {name}.__init__ raised "
                        f"{type(err).__name__}: {err}")
        try:
            with contextlib.redirect_stdout(open(os.devnull, "w")):
                translation = translate_trainer(trainer)
        except UnsupportedTrainerSetting as err:
            return CheckResult(name, False, str(err))
    return CheckResult(name, True, translation=translation, note=note)


def variant_classes() -> List[type]:
    """Every nnUNetTrainer subclass defined in a module under nnunetv2/training/nnUNetTrainer/variants/, in module
    and definition order."""
    import importlib
    import inspect
    import pkgutil

    import nnunetv2.training.nnUNetTrainer.variants as variants
    from nnunetv2.training.nnUNetTrainer.nnUNetTrainer import nnUNetTrainer

    out = []
    for info in sorted(pkgutil.walk_packages(variants.__path__, variants.__name__ + "."), key=lambda i: i.name):
        if info.ispkg:
            continue
        module = importlib.import_module(info.name)
        classes = [c for _, c in inspect.getmembers(module, inspect.isclass)
                   if issubclass(c, nnUNetTrainer) and c.__module__ == module.__name__]
        out += sorted(classes, key=lambda c: inspect.getsourcelines(c)[1])
    return out


def walk_variants(configuration: str = "3d_fullres") -> List[CheckResult]:
    """check_trainer for every variant class (on the built-in example plans)."""
    return [check_trainer(c.__name__, None, configuration, cls=c) for c in variant_classes()]


def main(args) -> int:
    result = check_trainer(args.tr, args.d, args.c, args.p, args.f)
    print(result.report())
    return 0 if result.ok else 1


def add_arguments(p) -> None:
    p.add_argument("-tr", required=True, metavar="TRAINER", help="trainer class name (as for nnUNetv2_train -tr)")
    p.add_argument("-d", default=None, metavar="DATASET",
                   help="dataset name or id under $nnUNet_preprocessed (default: a built-in example configuration)")
    p.add_argument("-p", default="nnUNetPlans", metavar="PLANS",
                   help="plans identifier, e.g. nnUNetResEncUNetMPlans (default: nnUNetPlans; needs -d)")
    p.add_argument("-c", default="3d_fullres", metavar="CONFIGURATION", help="configuration (default: 3d_fullres)")
    p.add_argument("-f", default=0, type=int, metavar="FOLD", help="fold (default 0)")


__all__: List[str] = ["CheckResult", "check_trainer", "example_plans", "main", "add_arguments", "variant_classes",
                       "walk_variants"]
