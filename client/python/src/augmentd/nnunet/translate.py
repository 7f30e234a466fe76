"""Translation of an nnU-Net trainer's own batchgeneratorsv2 pipeline into augmentd pipeline entries.

The trainer's ``get_training_transforms`` / ``get_validation_transforms`` are called with exactly the arguments
``nnUNetTrainer.get_dataloaders`` passes (``trainer_call_arguments``); the bgv2 objects they return are walked
(``ComposeTransforms``, ``RandomTransform``, ``OneOfTransform``, ``Convert3DTo2D`` … ``Convert2DTo3D`` around a
``SpatialTransform``, every leaf transform augmentd implements) and every constructor attribute is carried over:
RandomScalar constants, ``(lo, hi)`` ranges, ``BGContrast`` and the known callables of nnUNetTrainerDA5. What
cannot be expressed raises ``Untranslatable`` naming the bgv2 class and attribute — nothing is silently dropped.

    tr = translate_trainer(trainer)          # an initialized nnUNetTrainer (any subclass)
    for row in tr.train.rows(): print(row)   # bgv2 class → augmentd entry, parameters
    protos = tr.train.protos()               # [pipeline_pb2.TransformSpec] for an explicit PipelineSpec

An ``Entry.config`` uses the engine's JSON keys (bgv2's constructor argument names, ``augment/capi.h``), so a
translation can also be run by the engine's C ABI; ``Entry.proto()`` is the wire form.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from augmentd.v1 import pipeline_pb2

from .config import UnsupportedTrainerSetting


class Untranslatable(UnsupportedTrainerSetting):
    """A bgv2 object (or one of its attributes) that augmentd cannot reproduce; the message names it."""


# The cascade's transforms (3d_cascade_fullres; TransformKind wire numbers 40..42).
CASCADE_CLASSES = ("MoveSegAsOneHotToDataTransform", "ApplyRandomBinaryOperatorTransform",
                   "RemoveRandomConnectedComponentFromOneHotEncodingTransform")


@dataclasses.dataclass
class Entry:
    """One augmentd pipeline entry and where it came from."""
    source: str                 # bgv2 path, e.g. "RandomTransform(p=0.1) > GaussianNoiseTransform"
    kind: str                   # engine transform name ("gaussian_noise"), TransformKind in lower case
    config: Dict[str, Any]      # engine JSON config (bgv2 argument names)
    apply_probability: float = 1.0
    one_of_group: int = 0
    # AugLab's same_on_batch=True: True = one decision + one draw per batch; "decision" = one decision per batch,
    # parameters per sample (augment/pipeline.h TransformSpec::same_on_batch); False: per sample
    same_on_batch: Union[bool, str] = False
    # AugLab's in_seg / out_seg / mix_in_out (augment/region_mode.h): {"in_seg", "out_seg", "mix_in_out",
    # optionally "per_sample_coins"} or None
    region_mode: Optional[Dict[str, Any]] = None
    channels: Optional[List[int]] = None  # image channels the entry sees (AugLab's apply_to_channel); None: all

    def __post_init__(self) -> None:
        # Any other string would be truthy and reach the server as same_on_batch=True (the engine JSON and the wire
        # form both test `if self.same_on_batch`), silently sharing the parameters too.
        if isinstance(self.same_on_batch, str) and self.same_on_batch != "decision":
            raise ValueError(f"Entry.same_on_batch: expected False, True or \"decision\", got {self.same_on_batch!r}")

    def engine_json(self) -> dict:
        j = {"kind": self.kind, "config": self.config}
        if self.apply_probability != 1.0:
            j["apply_probability"] = self.apply_probability
        if self.one_of_group:
            j["one_of_group"] = self.one_of_group
        if self.same_on_batch:
            j["same_on_batch"] = "decision" if self.same_on_batch == "decision" else True
        if self.region_mode:
            j["region_mode"] = dict(self.region_mode)
        if self.channels is not None:
            j["channels"] = [int(c) for c in self.channels]
        return j


@dataclasses.dataclass
class Pipeline:
    """A translated transform list."""
    entries: List[Entry]
    folded: List[str]           # bgv2 objects expressed by other entries (Convert3DTo2D → spatial dummy_2d, ...)
    ndim: int = 3               # spatial dimensions of the patches

    def protos(self) -> List[pipeline_pb2.TransformSpec]:
        return [entry_proto(e, self.ndim) for e in self.entries]

    def engine_json(self) -> dict:
        return {"transforms": [e.engine_json() for e in self.entries]}

    def rows(self) -> List[Tuple[str, str, str]]:
        """(bgv2 source, augmentd entry, parameters) per entry, for tables."""
        out = []
        for e in self.entries:
            entry = e.kind + (f" p={_fmt(e.apply_probability)}" if e.apply_probability != 1.0 else "") + \
                (f" one_of={e.one_of_group}" if e.one_of_group else "")
            out.append((e.source, entry, ", ".join(f"{k}={_fmt(v)}" for k, v in e.config.items())))
        return out


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_fmt(x)}" for k, x in v.items()) + "}"
    return str(v)


# -- values ----------------------------------------------------------------------------------------------------
def _number(v, where: str) -> float:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise Untranslatable(f"{where}={v!r}: expected a number")
    f = float(v)
    if not math.isfinite(f):
        raise Untranslatable(f"{where}={v!r}: must be finite")
    return f


def _int(v, where: str) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        if isinstance(v, numbers.Real) and float(v).is_integer():
            return int(v)
        raise Untranslatable(f"{where}={v!r}: expected an integer")
    return int(v)


def _bool(v, where: str) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, numbers.Integral) and int(v) in (0, 1):
        return bool(v)
    raise Untranslatable(f"{where}={v!r}: expected a bool")


def _ints(v, where: str) -> List[int]:
    if isinstance(v, (set, frozenset)):
        v = sorted(v)
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if not isinstance(v, (list, tuple)):
        raise Untranslatable(f"{where}={v!r}: expected a list of integers")
    return [_int(x, where) for x in v]


def _pair(v, where: str) -> List[float]:
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        raise Untranslatable(f"{where}={v!r}: expected (lo, hi)")
    lo, hi = _number(v[0], where), _number(v[1], where)
    if lo > hi:
        raise Untranslatable(f"{where}={v!r}: lo > hi (bgv2 refuses it too)")
    return [lo, hi]


def _known_callables() -> Dict[Callable, Any]:
    """The callables nnU-Net passes as RandomScalars, with the engine JSON of the same distribution."""
    out: Dict[Callable, Any] = {}
    try:
        from nnunetv2.training.nnUNetTrainer.variants.data_augmentation import nnUNetTrainerDA5 as da5
    except ImportError:  # pragma: no cover - nnU-Net < 2.2
        return out
    # exp(U(ln(S // 6), ln(S))) for axis size S (x[y] is the axis size)
    if hasattr(da5, "_brightnessadditive_localgamma_transform_scale"):
        out[da5._brightnessadditive_localgamma_transform_scale] = {"axis_size_log_uniform": [6.0, 1.0]}
    # U(-5, -1) if U() < 0.5 else U(1, 5)
    if hasattr(da5, "_brightness_gradient_additive_max_strength"):
        out[da5._brightness_gradient_additive_max_strength] = {"mixture": [
            {"weight": 0.5, "range": [-5.0, -1.0]}, {"weight": 0.5, "range": [1.0, 5.0]}]}
    # U(0.01, 0.8) if U() < 0.5 else U(1.5, 4)
    if hasattr(da5, "_local_gamma_gamma"):
        out[da5._local_gamma_gamma] = {"mixture": [
            {"weight": 0.5, "range": [0.01, 0.8]}, {"weight": 0.5, "range": [1.5, 4.0]}]}
    return out


def _scalar(v, where: str, callables_ok: bool = False):
    """bgv2 RandomScalar → engine JSON: a number, [lo, hi], {"bg_contrast": [lo, hi]} or a known callable's form."""
    from batchgeneratorsv2.transforms.intensity.contrast import BGContrast

    if isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)):
        return _number(v, where)
    if isinstance(v, (list, tuple, np.ndarray)):
        return _pair(v, where)
    if type(v) is BGContrast:
        if callable(v.contrast_range):
            raise Untranslatable(f"{where}=BGContrast({v.contrast_range!r}): a callable contrast_range cannot be "
                                 f"sent to the server")
        return {"bg_contrast": _pair(v.contrast_range, where + ".contrast_range")}
    if callable(v):
        known = _known_callables()
        if callables_ok and v in known:
            return known[v]
        name = getattr(v, "__qualname__", type(v).__name__)
        module = getattr(v, "__module__", "?")
        hint = " (known callables: nnUNetTrainerDA5's scale / max_strength / gamma functions, here only)" \
            if known else ""
        raise Untranslatable(f"{where}={module}.{name}: a sampling function cannot be sent to the server{hint}")
    raise Untranslatable(f"{where}={v!r}: not a bgv2 RandomScalar (number, (lo, hi) or callable)")


# -- leaf transforms ---------------------------------------------------------------------------------------------
# Attributes a bgv2 object carries that are not parameters (caches, derived state).
_IGNORED_ATTRS = {"_grid_cache", "benchmark_use_fft", "benchmark_num_runs", "upmodes"}


def _attrs(t, known: Sequence[str], where: str) -> None:
    """Refuses attributes augmentd does not know (a newer bgv2 version's parameter, a subclass's state)."""
    extra = sorted(k for k in vars(t) if k not in known and k not in _IGNORED_ATTRS)
    if extra:
        raise Untranslatable(f"{where}.{extra[0]}: attribute unknown to augmentd's translation of "
                             f"{type(t).__name__} (bgv2 version newer than the translator?)")


def _spatial(t, where: str, ndim: int) -> dict:
    keys = ("patch_size", "patch_center_dist_from_border", "random_crop", "p_elastic_deform", "elastic_deform_scale",
            "elastic_deform_magnitude", "p_synchronize_def_scale_across_axes", "p_rotation", "rotation",
            "p_rot_per_axis", "p_scaling", "scaling", "p_synchronize_scaling_across_axes", "bg_style_seg_sampling",
            "mode_seg", "border_mode_seg", "center_deformation", "mode_image", "padding_mode_image",
            "padding_value_seg", "padding_value_image", "align_corners")
    # batchgeneratorsv2 0.3.6 adds seg_tiebreak (segmentation resampling ties): carried where the contract has it
    tiebreak_field = "seg_tiebreak" in pipeline_pb2.SpatialParams.DESCRIPTOR.fields_by_name
    _attrs(t, keys + (("seg_tiebreak",) if tiebreak_field else ()), where)
    modes = {"bilinear", "nearest"}
    borders = {"zeros", "constant", "border", "reflection"}
    for attr, allowed in (("mode_seg", modes), ("mode_image", modes), ("border_mode_seg", borders),
                          ("padding_mode_image", borders)):
        if getattr(t, attr) not in allowed:
            raise Untranslatable(f"{where}.{attr}={getattr(t, attr)!r}: augmentd supports {sorted(allowed)}")
    if t.align_corners:
        raise Untranslatable(f"{where}.align_corners=True: augmentd resamples with align_corners=False only")
    border = [_number(v, where + ".patch_center_dist_from_border") for v in t.patch_center_dist_from_border]
    return {
        "patch_size": _ints(t.patch_size, where + ".patch_size"),
        # bgv2 expands one value to every axis; the contract takes one value (all axes) or one per axis
        "patch_center_dist_from_border": border[:1] if len(set(border)) == 1 else border,
        "random_crop": _bool(t.random_crop, where + ".random_crop"),
        "p_elastic_deform": _number(t.p_elastic_deform, where + ".p_elastic_deform"),
        "elastic_deform_scale": _scalar(t.elastic_deform_scale, where + ".elastic_deform_scale"),
        "elastic_deform_magnitude": _scalar(t.elastic_deform_magnitude, where + ".elastic_deform_magnitude"),
        "p_synchronize_def_scale_across_axes": _number(t.p_synchronize_def_scale_across_axes,
                                                       where + ".p_synchronize_def_scale_across_axes"),
        "p_rotation": _number(t.p_rotation, where + ".p_rotation"),
        "rotation": _scalar(t.rotation, where + ".rotation"),
        "p_rot_per_axis": _number(t.p_rot_per_axis, where + ".p_rot_per_axis"),
        "p_scaling": _number(t.p_scaling, where + ".p_scaling"),
        "scaling": _scalar(t.scaling, where + ".scaling"),
        "p_synchronize_scaling_across_axes": _number(t.p_synchronize_scaling_across_axes,
                                                     where + ".p_synchronize_scaling_across_axes"),
        "bg_style_seg_sampling": _bool(t.bg_style_seg_sampling, where + ".bg_style_seg_sampling"),
        "mode_seg": t.mode_seg,
        "border_mode_seg": t.border_mode_seg,
        "center_deformation": _bool(t.center_deformation, where + ".center_deformation"),
        "mode_image": t.mode_image,
        "padding_mode_image": t.padding_mode_image,
        "padding_value_seg": _number(t.padding_value_seg, where + ".padding_value_seg"),
        "padding_value_image": _number(t.padding_value_image, where + ".padding_value_image"),
        "align_corners": False,
        **({"seg_tiebreak": str(t.seg_tiebreak)} if tiebreak_field and hasattr(t, "seg_tiebreak") else {}),
    }


def _simple(spec: Dict[str, Callable]) -> Callable:
    """A converter from a table {attribute: converter(value, where)}: every attribute, in order."""
    def convert(t, where: str, ndim: int) -> dict:
        _attrs(t, list(spec), where)
        return {k: f(getattr(t, k), f"{where}.{k}") for k, f in spec.items()}
    return convert


def _opt_ints(v, where):
    return None if v is None else _ints(v if isinstance(v, (list, tuple, set, np.ndarray)) else [v], where)


def _scalar_fn(v, where):
    return _scalar(v, where, callables_ok=True)


def _regions(t, where: str, ndim: int) -> dict:
    _attrs(t, ("regions", "channel_in_seg"), where)
    regions = []
    for i, r in enumerate(t.regions):  # bgv2 stores each region as a float tensor of its labels
        labels = r.tolist() if hasattr(r, "tolist") else list(r)
        regions.append([_int(v, f"{where}.regions[{i}]") for v in labels])
    return {"regions": regions, "channel_in_seg": _int(t.channel_in_seg, where + ".channel_in_seg")}


def _ds(t, where: str, ndim: int) -> dict:
    _attrs(t, ("ds_scales",), where)
    scales = []
    for i, s in enumerate(t.ds_scales):
        s = list(s) if isinstance(s, (list, tuple, np.ndarray)) else [s] * ndim
        scales.append([_number(f, f"{where}.ds_scales[{i}]") for f in s])
    return {"ds_scales": scales}


def _int_or_range(v, where):
    if isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    r = _ints(v, where)
    if len(r) != 2:
        raise Untranslatable(f"{where}={v!r}: expected an integer or [lo, hi)")
    return r


def _blank_rectangle(t, where: str, ndim: int) -> dict:
    _attrs(t, ("rectangle_size", "num_rectangles", "force_square", "p_per_channel", "color_fn"), where)
    import torch

    size = t.rectangle_size
    if isinstance(size, numbers.Integral):
        rect = _int(size, where + ".rectangle_size")
    elif isinstance(size, (list, tuple)) and all(isinstance(x, numbers.Integral) for x in size):
        rect = _ints(size, where + ".rectangle_size")
    elif isinstance(size, (list, tuple)) and all(isinstance(x, (list, tuple)) for x in size):
        rect = [_ints(x, where + ".rectangle_size") for x in size]
        if any(len(x) != 2 for x in rect):
            raise Untranslatable(f"{where}.rectangle_size={size!r}: per-axis entries must be [lo, hi)")
    else:
        raise Untranslatable(f"{where}.rectangle_size={size!r}: expected an int, ints per axis or [lo, hi) per axis")
    value = t.color_fn.rectangle_value
    if value is torch.mean:
        rv: Any = "mean"
    elif isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
        rv = _number(value, where + ".rectangle_value")
    elif isinstance(value, (list, tuple)):
        rv = _pair(value, where + ".rectangle_value")
    else:
        raise Untranslatable(f"{where}.rectangle_value={value!r}: augmentd supports a number, (lo, hi) and torch.mean")
    return {"rectangle_size": rect, "rectangle_value": rv,
            "num_rectangles": _int_or_range(t.num_rectangles, where + ".num_rectangles"),
            "force_square": _bool(t.force_square, where + ".force_square"),
            "p_per_channel": _number(t.p_per_channel, where + ".p_per_channel")}


def _channel_list(v, where):
    return _ints(v if isinstance(v, (list, tuple, np.ndarray)) else [v], where)


def _binary_operator(t, where: str, ndim: int) -> dict:
    from batchgeneratorsv2.transforms.nnunet import random_binary_operator as rbo

    _attrs(t, ("channel_idx", "any_of_these", "strel_size", "p_per_label"), where)
    names = {getattr(rbo, f"binary_{n}_torch", None): n for n in ("dilation", "erosion", "closing", "opening")}
    ops = []
    for i, f in enumerate(t.any_of_these):
        if f not in names:
            raise Untranslatable(f"{where}.any_of_these[{i}]={getattr(f, '__qualname__', f)!r}: augmentd knows bgv2's "
                                 f"binary_{{dilation,erosion,closing,opening}}_torch only")
        ops.append(names[f])
    return {"channel_idx": _channel_list(t.channel_idx, where + ".channel_idx"),
            "strel_size": _scalar(t.strel_size, where + ".strel_size"),
            "p_per_label": _number(t.p_per_label, where + ".p_per_label"), "any_of_these": ops}


_N, _B, _S = _number, _bool, _scalar

# bgv2 class name → (augmentd transform name, converter). Looked up by exact type (a subclass may change apply()).
LEAVES: Dict[str, Tuple[str, Callable]] = {
    "SpatialTransform": ("spatial", _spatial),
    "GaussianNoiseTransform": ("gaussian_noise", _simple(
        {"noise_variance": _S, "p_per_channel": _N, "synchronize_channels": _B})),
    "GaussianBlurTransform": ("gaussian_blur", _simple(
        {"blur_sigma": _S, "synchronize_channels": _B, "synchronize_axes": _B, "p_per_channel": _N,
         "benchmark": _B})),
    "MultiplicativeBrightnessTransform": ("multiplicative_brightness", _simple(
        {"multiplier_range": _S, "synchronize_channels": _B, "p_per_channel": _N})),
    "ContrastTransform": ("contrast", _simple(
        {"contrast_range": _S, "preserve_range": _B, "synchronize_channels": _B, "p_per_channel": _N})),
    "SimulateLowResolutionTransform": ("simulate_low_resolution", _simple(
        {"scale": _S, "synchronize_channels": _B, "synchronize_axes": _B, "ignore_axes": _opt_ints,
         "allowed_channels": _opt_ints, "p_per_channel": _N})),
    "GammaTransform": ("gamma", _simple(
        {"gamma": _S, "p_invert_image": _N, "synchronize_channels": _B, "p_per_channel": _N,
         "p_retain_stats": _N})),
    "MirrorTransform": ("mirror", _simple({"allowed_axes": _ints})),
    "MaskImageTransform": ("mask_image", _simple(
        {"apply_to_channels": _ints, "channel_idx_in_seg": _int, "set_outside_to": _N})),
    "RemoveLabelTransform": ("remove_label", _simple(
        {"label_value": _int, "set_to": _int, "segmentation_channels": _opt_ints})),
    "ConvertSegmentationToRegionsTransform": ("convert_segmentation_to_regions", _regions),
    "DownsampleSegForDSTransform": ("downsample_seg_for_ds", _ds),
    "Rot90Transform": ("rot90", _simple(
        {"num_axis_combinations": _S, "num_rot_per_combination": _ints, "allowed_axes": _ints})),
    "TransposeAxesTransform": ("transpose_axes", _simple({"allowed_axes": _ints})),
    "MedianFilterTransform": ("median_filter", _simple(
        {"filter_size": _int_or_range, "p_same_for_each_channel": _N, "p_per_channel": _N})),
    "BrightnessAdditiveTransform": ("brightness_additive", _simple(
        {"mu": _N, "sigma": _N, "synchronize_channels": _B, "p_per_channel": _N})),
    "BlankRectangleTransform": ("blank_rectangle", _blank_rectangle),
    "BrightnessGradientAdditiveTransform": ("brightness_gradient_additive", _simple(
        {"scale": _scalar_fn, "loc": _scalar_fn, "max_strength": _scalar_fn, "same_for_all_channels": _B,
         "mean_centered": _B, "clip_intensities": _B, "p_per_channel": _N})),
    "LocalGammaTransform": ("local_gamma", _simple(
        {"scale": _scalar_fn, "loc": _scalar_fn, "gamma": _scalar_fn, "same_for_all_channels": _B,
         "p_per_channel": _N})),
    "SharpeningTransform": ("sharpening", _simple(
        {"strength": _S, "p_same_for_each_channel": _N, "p_per_channel": _N, "p_clamp_intensities": _N})),
    "RicianNoiseTransform": ("rician_noise", _simple({"noise_variance": _pair})),
    "MoveSegAsOneHotToDataTransform": ("move_seg_as_one_hot_to_data", _simple(
        {"source_channel_idx": _int, "all_labels": _ints, "remove_channel_from_source": _B})),
    "ApplyRandomBinaryOperatorTransform": ("apply_random_binary_operator", _binary_operator),
    "RemoveRandomConnectedComponentFromOneHotEncodingTransform": ("remove_random_connected_component", _simple(
        {"channel_idx": _channel_list, "fill_with_other_class_p": _N, "dont_do_if_covers_more_than_x_percent": _N,
         "p_per_label": _N})),
}


def _bgv2_class(t) -> Optional[str]:
    """The class name if ``t`` is exactly a batchgeneratorsv2 class (not a user subclass)."""
    module = type(t).__module__ or ""
    return type(t).__name__ if module.startswith("batchgeneratorsv2.") else None


# -- the walk ----------------------------------------------------------------------------------------------------
class _Walker:
    def __init__(self, ndim: int, where: str):
        self.ndim = ndim
        self.where = where
        self.entries: List[Entry] = []
        self.folded: List[str] = []
        self.group = 0
        self.in_2d = False  # between Convert3DTo2DTransform and Convert2DTo3DTransform

    def walk(self, t, path: str, p: float = 1.0, group: int = 0) -> None:
        name = _bgv2_class(t)
        label = path + type(t).__name__
        where = f"{self.where}: {label}"
        if name in ("ComposeTransforms", "TimedComposeTransforms"):
            if p != 1.0 or group:
                raise Untranslatable(f"{where}: a ComposeTransforms inside RandomTransform / OneOfTransform (one "
                                     f"decision for several transforms) cannot be expressed")
            if name == "TimedComposeTransforms":
                self.folded.append(f"{label} (timing only: run as ComposeTransforms)")
            for i, child in enumerate(t.transforms):
                self.walk(child, f"{label}[{i}] > " if path else f"[{i}] ")
            return
        if name == "RandomTransform":
            self.walk(t.transform, f"{label}(p={_fmt(float(t.apply_probability))}) > ",
                      p * _number(t.apply_probability, where + ".apply_probability"), group)
            return
        if name == "OneOfTransform":
            if group:
                raise Untranslatable(f"{where}: nested OneOfTransform cannot be expressed")
            members = list(t.list_of_transforms)
            if not members:
                raise Untranslatable(f"{where}.list_of_transforms: empty")
            self.group += 1
            g = self.group if len(members) > 1 else 0
            for i, m in enumerate(members):
                self.walk(m, f"{label}[{i}] > ", p, g)
            return
        if name == "Convert3DTo2DTransform":
            if self.in_2d:
                raise Untranslatable(f"{where}: nested Convert3DTo2DTransform")
            if p != 1.0 or group:
                raise Untranslatable(f"{where}: Convert3DTo2DTransform must be applied unconditionally")
            self.in_2d = True
            self.folded.append(f"{label} (spatial dummy_2d)")
            self._2d_start = len(self.entries)
            return
        if name == "Convert2DTo3DTransform":
            if not self.in_2d:
                raise Untranslatable(f"{where}: Convert2DTo3DTransform without Convert3DTo2DTransform")
            if p != 1.0 or group:
                raise Untranslatable(f"{where}: Convert2DTo3DTransform must be applied unconditionally")
            inner = self.entries[self._2d_start:]
            if len(inner) != 1 or inner[0].kind != "spatial":
                raise Untranslatable(f"{where}: augmentd folds exactly one SpatialTransform between "
                                     f"Convert3DTo2DTransform and Convert2DTo3DTransform, got "
                                     f"{[e.kind for e in inner]}")
            inner[0].config["dummy_2d"] = True
            self.in_2d = False
            self.folded.append(f"{label} (spatial dummy_2d)")
            return
        if name is None:
            bases = [c for c in type(t).__mro__[1:] if (c.__module__ or "").startswith("batchgeneratorsv2.")]
            what = f"a subclass of {bases[0].__module__}.{bases[0].__name__}" if bases else "not a bgv2 transform"
            raise Untranslatable(f"{where} ({type(t).__module__}): {what}; augmentd translates batchgeneratorsv2's "
                                 f"own classes only (a subclass may change what they do)")
        name = "RemoveLabelTransform" if name == "RemoveLabelTansform" else name
        if name not in LEAVES:
            raise Untranslatable(f"{where} ({type(t).__module__}): no augmentd transform for this bgv2 class")
        kind, convert = LEAVES[name]
        if self.in_2d and kind != "spatial":
            raise Untranslatable(f"{where}: only SpatialTransform may run between Convert3DTo2DTransform and "
                                 f"Convert2DTo3DTransform")
        config = convert(t, where, self.ndim)
        config = {k: v for k, v in config.items() if v is not None}
        self.entries.append(Entry(source=label, kind=kind, config=config, apply_probability=p, one_of_group=group))


def translate_transforms(transforms, ndim: int, where: str = "transforms") -> Pipeline:
    """Translates a bgv2 transform (usually a ComposeTransforms) for ``ndim``-D patches. Raises Untranslatable."""
    w = _Walker(ndim, where)
    w.walk(transforms, "")
    if w.in_2d:
        raise Untranslatable(f"{where}: Convert3DTo2DTransform without Convert2DTo3DTransform")
    return Pipeline(w.entries, w.folded, ndim)


# -- the trainer ---------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class TrainerTranslation:
    trainer_class: str
    train: Pipeline
    val: Pipeline
    initial_patch_size: List[int]   # the training loader's crop (configure_rotation_dummyDA_..._inital_patch_size)
    patch_size: List[int]           # the validation loader's crop and the final patch
    train_preset: int               # PRESET_* whose expansion is this training pipeline, or PRESET_UNSPECIFIED
    val_preset: int
    train_call: Tuple[tuple, dict] = ((), {})  # the (args, kwargs) get_training_transforms was called with


def trainer_call_arguments(trainer) -> Tuple[tuple, dict, tuple, dict, list]:
    """The arguments nnUNetTrainer.get_dataloaders passes to get_training_transforms / get_validation_transforms
    (from the trainer's own methods, so their overrides count), and the initial patch size."""
    patch_size = trainer.configuration_manager.patch_size
    ds = trainer._get_deep_supervision_scales()
    rotation, dummy_2d, initial, mirror_axes = trainer.configure_rotation_dummyDA_mirroring_and_inital_patch_size()
    lm = trainer.label_manager
    regions = lm.foreground_regions if lm.has_regions else None
    train_args = (patch_size, rotation, ds, mirror_axes, dummy_2d)
    train_kwargs = dict(use_mask_for_norm=trainer.configuration_manager.use_mask_for_norm,
                        is_cascaded=trainer.is_cascaded, foreground_labels=lm.foreground_labels, regions=regions,
                        ignore_label=lm.ignore_label)
    val_args = (ds,)
    val_kwargs = dict(is_cascaded=trainer.is_cascaded, foreground_labels=lm.foreground_labels, regions=regions,
                      ignore_label=lm.ignore_label)
    return train_args, train_kwargs, val_args, val_kwargs, [int(v) for v in initial]


def _same(a: Pipeline, b: Pipeline) -> bool:
    return [e.engine_json() for e in a.entries] == [e.engine_json() for e in b.entries]


def translate_trainer(trainer) -> TrainerTranslation:
    """Translates an initialized trainer's two pipelines. Raises Untranslatable (an UnsupportedTrainerSetting)."""
    from nnunetv2.training.nnUNetTrainer.nnUNetTrainer import nnUNetTrainer

    cls = type(trainer).__name__
    tr_args, tr_kwargs, val_args, val_kwargs, initial = trainer_call_arguments(trainer)
    patch = [int(v) for v in trainer.configuration_manager.patch_size]
    ndim = len(patch)
    train = translate_transforms(trainer.get_training_transforms(*tr_args, **tr_kwargs), ndim,
                                 f"{cls}.get_training_transforms")
    val = translate_transforms(trainer.get_validation_transforms(*val_args, **val_kwargs), ndim,
                               f"{cls}.get_validation_transforms")
    # The fast path: a pipeline equal to what the server's preset expands from the same trainer configuration
    # (nnUNetTrainer's / nnUNetTrainerDA5's own functions called with these arguments) and the preset's crop.
    candidates = [(pipeline_pb2.PRESET_NNUNET_DEFAULT, nnUNetTrainer.get_training_transforms, (0.85, 1.25))]
    try:
        from nnunetv2.training.nnUNetTrainer.variants.data_augmentation.nnUNetTrainerDA5 import nnUNetTrainerDA5
        candidates.append((pipeline_pb2.PRESET_NNUNET_DA5, nnUNetTrainerDA5.get_training_transforms, (0.7, 1.43)))
    except ImportError:  # pragma: no cover
        pass
    train_preset = pipeline_pb2.PRESET_UNSPECIFIED
    if tr_kwargs.get("is_cascaded"):
        # The server's presets have no cascade entries (its TrainerConfig refuses is_cascaded): explicit lists.
        return TrainerTranslation(cls, train, val, initial, patch, train_preset, train_preset, (tr_args, tr_kwargs))
    for preset, fn, scale_range in candidates:
        try:
            ref = translate_transforms(fn(*tr_args, **tr_kwargs), ndim, "preset")
        except (Untranslatable, AssertionError):
            continue
        if _same(train, ref) and initial == _preset_initial_patch_size(tr_args, scale_range):
            train_preset = preset
            break
    val_ref = translate_transforms(nnUNetTrainer.get_validation_transforms(*val_args, **val_kwargs), ndim, "preset")
    if train_preset == pipeline_pb2.PRESET_UNSPECIFIED and _same(train, val_ref) and initial == patch:
        train_preset = pipeline_pb2.PRESET_NNUNET_VALIDATION  # e.g. nnUNetTrainerNoDA: crops, no augmentation
    val_preset = pipeline_pb2.PRESET_NNUNET_VALIDATION if _same(val, val_ref) else pipeline_pb2.PRESET_UNSPECIFIED
    return TrainerTranslation(cls, train, val, initial, patch, train_preset, val_preset, (tr_args, tr_kwargs))


def _preset_initial_patch_size(tr_args, scale_range) -> List[int]:
    """The crop the server derives for a preset: nnU-Net's get_patch_size rule with the preset's scale range."""
    from nnunetv2.training.data_augmentation.compute_initial_patch_size import get_patch_size

    patch_size, rotation, _, _, dummy_2d = tr_args
    if not isinstance(rotation, (tuple, list)):
        return []
    dim = len(patch_size)
    out = get_patch_size(patch_size[-dim:], rotation, rotation, rotation, scale_range)
    if dummy_2d:
        out[0] = patch_size[0]
    return [int(v) for v in out]


# -- wire form -----------------------------------------------------------------------------------------------------
_MODES = {"bilinear": pipeline_pb2.INTERPOLATION_MODE_BILINEAR, "nearest": pipeline_pb2.INTERPOLATION_MODE_NEAREST}
_BORDERS = {"zeros": pipeline_pb2.BORDER_MODE_ZEROS, "constant": pipeline_pb2.BORDER_MODE_CONSTANT,
            "border": pipeline_pb2.BORDER_MODE_BORDER, "reflection": pipeline_pb2.BORDER_MODE_REFLECTION}


def scalar_proto(v) -> pipeline_pb2.RandomScalar:
    """Engine-JSON RandomScalar → pipeline_pb2.RandomScalar."""
    if isinstance(v, (int, float)):
        return pipeline_pb2.RandomScalar(constant=float(v))
    if isinstance(v, list):
        return pipeline_pb2.RandomScalar(uniform=pipeline_pb2.Range(min=v[0], max=v[1]))
    if "bg_contrast" in v:
        lo, hi = v["bg_contrast"]
        return pipeline_pb2.RandomScalar(bg_contrast=pipeline_pb2.Range(min=lo, max=hi))
    if "axis_size_log_uniform" in v:
        lo, hi = v["axis_size_log_uniform"]
        return pipeline_pb2.RandomScalar(axis_size_log_uniform=pipeline_pb2.AxisSizeLogUniform(
            low_divisor=lo, high_divisor=hi))
    if "mixture" in v:
        return pipeline_pb2.RandomScalar(mixture=pipeline_pb2.RangeMixture(components=[
            pipeline_pb2.WeightedRange(range=pipeline_pb2.Range(min=c["range"][0], max=c["range"][1]),
                                       weight=c["weight"]) for c in v["mixture"]]))
    raise ValueError(f"not an engine RandomScalar: {v!r}")


def _int_range(v) -> pipeline_pb2.IntRange:
    return pipeline_pb2.IntRange(min=v, max=v + 1) if isinstance(v, int) else pipeline_pb2.IntRange(min=v[0],
                                                                                                     max=v[1])


def _params_proto(kind: str, c: dict, ndim: int):
    """The Params message of one entry. Every field is set (also those whose value is bgv2's default)."""
    P = pipeline_pb2
    if kind == "spatial":
        return P.SpatialParams(
            patch_size=c["patch_size"], patch_center_dist_from_border=[int(v) for v in
                                                                       c["patch_center_dist_from_border"]],
            random_crop=c["random_crop"], p_elastic_deform=c["p_elastic_deform"],
            elastic_deform_scale=scalar_proto(c["elastic_deform_scale"]),
            elastic_deform_magnitude=scalar_proto(c["elastic_deform_magnitude"]),
            p_synchronize_def_scale_across_axes=c["p_synchronize_def_scale_across_axes"],
            p_rotation=c["p_rotation"], rotation=scalar_proto(c["rotation"]), p_rot_per_axis=c["p_rot_per_axis"],
            p_scaling=c["p_scaling"], scaling=scalar_proto(c["scaling"]),
            p_synchronize_scaling_across_axes=c["p_synchronize_scaling_across_axes"],
            bg_style_seg_sampling=c["bg_style_seg_sampling"], mode_seg=_MODES[c["mode_seg"]],
            border_mode_seg=_BORDERS[c["border_mode_seg"]], center_deformation=c["center_deformation"],
            mode_image=_MODES[c["mode_image"]], padding_mode_image=_BORDERS[c["padding_mode_image"]],
            padding_value_seg=c["padding_value_seg"], padding_value_image=c["padding_value_image"],
            align_corners=c["align_corners"], dummy_2d=c.get("dummy_2d", False),
            **({"seg_tiebreak": c["seg_tiebreak"]} if "seg_tiebreak" in c else {}))
    if kind == "gaussian_noise":
        return P.GaussianNoiseParams(noise_variance=scalar_proto(c["noise_variance"]),
                                     p_per_channel=c["p_per_channel"], synchronize_channels=c["synchronize_channels"])
    if kind == "gaussian_blur":
        return P.GaussianBlurParams(blur_sigma=scalar_proto(c["blur_sigma"]),
                                    synchronize_channels=c["synchronize_channels"],
                                    synchronize_axes=c["synchronize_axes"], p_per_channel=c["p_per_channel"],
                                    benchmark=c["benchmark"])
    if kind == "multiplicative_brightness":
        return P.MultiplicativeBrightnessParams(multiplier_range=scalar_proto(c["multiplier_range"]),
                                                synchronize_channels=c["synchronize_channels"],
                                                p_per_channel=c["p_per_channel"])
    if kind == "contrast":
        return P.ContrastParams(contrast_range=scalar_proto(c["contrast_range"]), preserve_range=c["preserve_range"],
                                synchronize_channels=c["synchronize_channels"], p_per_channel=c["p_per_channel"])
    if kind == "simulate_low_resolution":
        return P.SimulateLowResolutionParams(scale=scalar_proto(c["scale"]),
                                             synchronize_channels=c["synchronize_channels"],
                                             synchronize_axes=c["synchronize_axes"],
                                             ignore_axes=c.get("ignore_axes", []),
                                             allowed_channels=c.get("allowed_channels", []),
                                             p_per_channel=c["p_per_channel"])
    if kind == "gamma":
        return P.GammaParams(gamma=scalar_proto(c["gamma"]), p_invert_image=c["p_invert_image"],
                             synchronize_channels=c["synchronize_channels"], p_per_channel=c["p_per_channel"],
                             p_retain_stats=c["p_retain_stats"])
    if kind == "mirror":
        return P.MirrorParams(allowed_axes=c["allowed_axes"])
    if kind == "mask_image":
        return P.MaskImageParams(apply_to_channels=c["apply_to_channels"], channel_idx_in_seg=c["channel_idx_in_seg"],
                                 set_outside_to=c["set_outside_to"])
    if kind == "remove_label":
        return P.RemoveLabelParams(label_value=c["label_value"], set_to=c["set_to"],
                                   segmentation_channels=c.get("segmentation_channels", []))
    if kind == "convert_segmentation_to_regions":
        return P.ConvertSegmentationToRegionsParams(regions=[P.Region(labels=r) for r in c["regions"]],
                                                    channel_in_seg=c["channel_in_seg"])
    if kind == "downsample_seg_for_ds":
        return P.DownsampleSegForDSParams(ds_scales=[P.Scale(factors=s) for s in c["ds_scales"]])
    if kind == "rot90":
        return P.Rot90Params(num_axis_combinations=scalar_proto(c["num_axis_combinations"]),
                             num_rot_per_combination=c["num_rot_per_combination"], allowed_axes=c["allowed_axes"])
    if kind == "transpose_axes":
        return P.TransposeAxesParams(allowed_axes=c["allowed_axes"])
    if kind == "median_filter":
        return P.MedianFilterParams(filter_size=_int_range(c["filter_size"]),
                                    p_same_for_each_channel=c["p_same_for_each_channel"],
                                    p_per_channel=c["p_per_channel"])
    if kind == "brightness_additive":
        return P.BrightnessAdditiveParams(mu=c["mu"], sigma=c["sigma"], synchronize_channels=c["synchronize_channels"],
                                          p_per_channel=c["p_per_channel"])
    if kind == "blank_rectangle":
        size = c["rectangle_size"]
        if isinstance(size, int):
            size = [size] * ndim
        v = c["rectangle_value"]
        value = (P.RectangleValue(rectangle_mean=True) if v == "mean" else
                 P.RectangleValue(uniform=P.Range(min=v[0], max=v[1])) if isinstance(v, list) else
                 P.RectangleValue(constant=v))
        return P.BlankRectangleParams(rectangle_size=[_int_range(s) for s in size], rectangle_value=value,
                                      num_rectangles=_int_range(c["num_rectangles"]),
                                      force_square=c["force_square"], p_per_channel=c["p_per_channel"])
    if kind == "brightness_gradient_additive":
        return P.BrightnessGradientAdditiveParams(
            scale=scalar_proto(c["scale"]), loc=scalar_proto(c["loc"]), max_strength=scalar_proto(c["max_strength"]),
            same_for_all_channels=c["same_for_all_channels"], mean_centered=c["mean_centered"],
            clip_intensities=c["clip_intensities"], p_per_channel=c["p_per_channel"])
    if kind == "local_gamma":
        return P.LocalGammaParams(scale=scalar_proto(c["scale"]), loc=scalar_proto(c["loc"]),
                                  gamma=scalar_proto(c["gamma"]), same_for_all_channels=c["same_for_all_channels"],
                                  p_per_channel=c["p_per_channel"])
    if kind == "sharpening":
        return P.SharpeningParams(strength=scalar_proto(c["strength"]),
                                  p_same_for_each_channel=c["p_same_for_each_channel"],
                                  p_per_channel=c["p_per_channel"], p_clamp_intensities=c["p_clamp_intensities"])
    if kind == "rician_noise":
        lo, hi = c["noise_variance"]
        return P.RicianNoiseParams(noise_variance=P.Range(min=lo, max=hi))
    if kind == "move_seg_as_one_hot_to_data":
        return P.MoveSegAsOneHotToDataParams(source_channel_idx=c["source_channel_idx"], all_labels=c["all_labels"],
                                             remove_channel_from_source=c["remove_channel_from_source"])
    if kind == "apply_random_binary_operator":
        return P.ApplyRandomBinaryOperatorParams(channel_idx=c["channel_idx"],
                                                 strel_size=scalar_proto(c["strel_size"]),
                                                 p_per_label=c["p_per_label"], any_of_these=c["any_of_these"])
    if kind == "remove_random_connected_component":
        return P.RemoveRandomConnectedComponentParams(
            channel_idx=c["channel_idx"], fill_with_other_class_p=c["fill_with_other_class_p"],
            dont_do_if_covers_more_than_x_percent=c["dont_do_if_covers_more_than_x_percent"],
            p_per_label=c["p_per_label"])
    if kind in pipeline_pb2.TransformSpec.DESCRIPTOR.fields_by_name:
        # Every other kind: its Params message uses the engine's JSON keys as field names (scalars, repeated scalars
        # and Range = [lo, hi] in the config), so a new kind needs no code here.
        return _generic_params_proto(kind, c)
    raise ValueError(f"no wire form for {kind!r}")


def _generic_params_proto(kind: str, c: dict):
    cls = getattr(pipeline_pb2, pipeline_pb2.TransformSpec.DESCRIPTOR.fields_by_name[kind].message_type.name)
    msg = cls()
    for key, v in c.items():
        f = cls.DESCRIPTOR.fields_by_name.get(key)
        if f is None:
            raise ValueError(f"{kind}.{key}: no such field in {cls.DESCRIPTOR.name}")
        if f.message_type is not None and f.message_type.name == "Range":
            lo, hi = (-float(v), float(v)) if isinstance(v, numbers.Number) else (float(v[0]), float(v[1]))
            getattr(msg, key).CopyFrom(pipeline_pb2.Range(min=lo, max=hi))
        elif (f.is_repeated if hasattr(f, "is_repeated") else f.label == f.LABEL_REPEATED):  # upb / python protobuf
            getattr(msg, key).extend(v)
        else:
            setattr(msg, key, v)
    return msg


def entry_proto(e: Entry, ndim: int = 3) -> pipeline_pb2.TransformSpec:
    spec = pipeline_pb2.TransformSpec(kind=pipeline_pb2.TransformKind.Value(e.kind.upper()),
                                      apply_probability=e.apply_probability, one_of_group=e.one_of_group,
                                      same_on_batch=bool(e.same_on_batch),
                                      same_on_batch_decision_only=e.same_on_batch == "decision",
                                      channels=list(e.channels or []))
    if e.region_mode:
        spec.region_mode.CopyFrom(pipeline_pb2.RegionMode(**e.region_mode))
    getattr(spec, e.kind).CopyFrom(_params_proto(e.kind, e.config, ndim))
    return spec
