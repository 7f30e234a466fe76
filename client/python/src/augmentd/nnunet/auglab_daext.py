"""AugLab's nnUNetTrainerDAExtGPU pipeline as augmentd entries: the ``auglab_daext_gpu`` preset (client side).

Built from an AugLab GPU parameter JSON — the file AugLab itself reads: ``$AUGLAB_PARAMS_GPU_JSON``, else
``auglab/configs/transform_params_gpu.json`` of the installed package (auglab 20260109's wheel ships none: then the
variable is required, as it is for AugLab's own trainer). The mapping table, AugLab class by class, with what is
reproduced and what is not: ``augment/transforms/AUGLAB_DAEXT.md``.

    params = load_auglab_params()                       # dict, AugLab's JSON ("GPU" block if present)
    pipe = daext_gpu_pipeline(params, patch_size=[64, 64, 64], acq_axis=1)
    pipe.engine_json()                                  # {"transforms": [...]} for the engine's C ABI
    pipe.protos()                                       # [pipeline_pb2.TransformSpec] for a session

The pipeline is what nnUNetTrainerDAExtGPU applies to a batch, in order: its CPU loader part (centre-crop
SpatialTransform with p_rotation 0 / p_scaling 0 and nearest labels, MaskImage, RemoveLabel(−1 → 0), regions, AugLab's
CPU ZscoreNormalization of channel 0 with the unbiased std), then ``AugTransformsGPU``'s entries in
``_build_transforms`` order (p = the entry's apply_probability, entries with p = 0 left out), then the DS pyramid
(``train_step`` builds it after the GPU transforms). The region modes ``in_seg`` / ``out_seg`` / ``mix_in_out``
become the entry's ``region_mode`` (augment/region_mode.h, AugLab 20260109's blend); with region modes on, AugLab's
five RandomFunctionGPU and its RandomInverseGPU become six ``intensity_function`` entries (one region draw each, as
AugLab), else one merged entry. ``per_batch`` (AugLab's ``same_on_batch=True``, the trainer's default) shares what
AugLab shares: the apply decision of every GPU entry, the parameters of all but random_convolution and
redistribute_seg (entry ``same_on_batch: "decision"``: parameters per sample, as AugLab's loop over the batch), the
region coins of all but the inverse (``per_sample_coins``); without it augmentd draws per sample (listed in
``folded``). AffineTransform is AugLab's own affine (``auglab_affine``,
p = 0 in the default JSON: left out). AugLab's intensity transforms act on channel 0 only (``apply_to_channel=[0]``):
AugLab's own kinds carry that config, the bgv2 stand-ins the entry option ``channels=[0]`` (the engine's per-entry
channel selection).
"""
from __future__ import annotations

import importlib.util
import json
import math
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from .translate import Entry, Pipeline, Untranslatable

ENV = "AUGLAB_PARAMS_GPU_JSON"
# AugLab's GPU intensity transforms act on apply_to_channel=[0] (AugTransformsGPU passes no other): the bgv2 kinds that
# stand in for them (noise, brightness, gamma, contrast) carry the engine's per-entry channel selection [0].
CHANNEL0 = [0]


def auglab_params_path() -> Path:
    """The JSON AugLab's nnUNetTrainerDAExtGPU would read (``$AUGLAB_PARAMS_GPU_JSON`` or the package's file)."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    spec = importlib.util.find_spec("auglab")
    if spec is not None and spec.submodule_search_locations:
        p = Path(list(spec.submodule_search_locations)[0]) / "configs" / "transform_params_gpu.json"
        if p.is_file():
            return p
    raise FileNotFoundError(f"no AugLab GPU parameter JSON: set {ENV} (auglab 20260109's wheel ships no "
                            "configs/transform_params_gpu.json)")


def load_auglab_params(path: Optional[os.PathLike] = None) -> Dict[str, Any]:
    with open(path or auglab_params_path()) as f:
        config = json.load(f)
    return config["GPU"] if "GPU" in config else config


def _p(block: Dict[str, Any]) -> float:
    return float(block.get("probability", 0))


def _region_mode(block: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The entry's region_mode for AugLab's block (None when both probabilities are 0: off)."""
    i, o = float(block.get("in_seg", 0)), float(block.get("out_seg", 0))
    if i <= 0 and o <= 0:
        return None
    return {"in_seg": i, "out_seg": o, "mix_in_out": bool(block.get("mix_in_out", False))}


def daext_gpu_entries(params: Dict[str, Any], acq_axis: int = 0, folded: Optional[List[str]] = None,
                      per_batch: bool = False) -> List[Entry]:
    """AugTransformsGPU's entries (``auglab/transforms/gpu/transforms.py`` _build_transforms order, the defaults
    its ``.get`` calls use). `acq_axis`: the one axis of AcqTransform (AugLab draws it once per run,
    ``torch.randint(0, 3)`` in x, y, z order = augmentd axis 2 − k; the caller draws it the same way)."""
    folded = [] if folded is None else folded
    out: List[Entry] = []

    def add(name: str, kind: str, config: Dict[str, Any], p: float, region_block: Optional[dict] = None,
            channels: Optional[List[int]] = None, batch_draws: Any = True, per_sample_coins: bool = False) -> None:
        if p <= 0:
            return
        # per_batch: AugLab's same_on_batch=True — one apply decision per batch for every GPU entry; the parameters
        # once per batch too (batch_draws True), or per sample where AugLab draws them inside its loop over the batch
        # (batch_draws "decision": RandConv kernels, RedistributeSeg jitter / amplitudes). AUGLAB_DAEXT.md's table.
        same = batch_draws if per_batch else False
        region = _region_mode(region_block) if region_block is not None else None
        if region is not None and per_sample_coins and per_batch:
            region["per_sample_coins"] = True  # RandomInverseGPU: its coins inside its loop over the batch
        out.append(Entry(source=f"AugTransformsGPU > {name} (p={p:g})", kind=kind, config=config, apply_probability=p,
                         same_on_batch=same, channels=None if channels is None else list(channels),
                         region_mode=region))

    b = params.get("ClampTransform")
    if b is not None:
        add("ClampTransform", "clamp", {"max_clamp_amount": float(b.get("max_clamp_amount", 0.0)),
                                        "retain_stats": bool(b.get("retain_stats", False))}, _p(b), b)
    b = params.get("GaussianNoiseTransform")
    if b is not None:
        if float(b.get("mean", 0.0)) != 0.0:
            raise Untranslatable("GaussianNoiseTransform.mean != 0: augmentd's gaussian_noise is zero-mean")
        add("GaussianNoiseTransform", "gaussian_noise",
            {"noise_variance": [0.0, float(b.get("std", 1.0))], "p_per_channel": 1.0, "synchronize_channels": True},
            _p(b), b, channels=CHANNEL0)
    b = params.get("GaussianBlurTransform")
    if b is not None:
        # AugLab's GaussianBlur = its UnsharpMask kernel without the sharpening: x + (−1)·(x − K⋆x) = K⋆x
        add("GaussianBlurTransform", "unsharp_mask", {"sigma": float(b.get("sigma", 1.0)), "unsharp_amount": -1.0},
            _p(b), b)
    b = params.get("BrightnessTransform")
    if b is not None:
        lo, hi = b.get("brightness_range", [0.5, 1.5])
        add("BrightnessTransform", "multiplicative_brightness",
            {"multiplier_range": [float(lo), float(hi)], "synchronize_channels": True, "p_per_channel": 1.0}, _p(b), b,
            channels=CHANNEL0)
    for key, invert in (("GammaTransform", 0.0), ("InvGammaTransform", 1.0)):
        b = params.get(key)
        if b is not None:
            lo, hi = b.get("gamma_range", [0.7, 1.5])
            add(key, "gamma", {"gamma": [float(lo), float(hi)], "p_invert_image": invert,
                               "synchronize_channels": True, "p_per_channel": 1.0,
                               "p_retain_stats": 1.0 if b.get("retain_stats", False) else 0.0}, _p(b), b,
                channels=CHANNEL0)
    b = params.get("ContrastTransform")
    if b is not None:
        if b.get("retain_stats", False):
            raise Untranslatable("ContrastTransform.retain_stats: augmentd's contrast has no retain_stats")
        lo, hi = b.get("contrast_range", [0.75, 1.25])
        add("ContrastTransform", "contrast", {"contrast_range": [float(lo), float(hi)], "preserve_range": False,
                                              "synchronize_channels": True, "p_per_channel": 1.0}, _p(b), b,
            channels=CHANNEL0)
    f, inv = params.get("FunctionTransform"), params.get("InverseTransform")
    if f is not None or inv is not None:
        f = f or {}
        inv = inv or {}
        cfg = {"p_function": _p(f), "retain_stats": bool(f.get("retain_stats", False)), "p_inverse": _p(inv),
               "inverse_retain_stats": bool(inv.get("retain_stats", False))}
        if (_p(f) > 0 or _p(inv) > 0) and (_region_mode(f) is not None or _region_mode(inv) is not None):
            # Each of AugLab's six transforms draws its own region: one entry each (log1p, sqrt, sin, exp, sigmoid
            # in func_list order, then the inverse), so each carries its block's region_mode.
            for fn in ("log1p", "sqrt", "sin", "exp", "sigmoid"):
                add(f"FunctionTransform {fn}", "intensity_function",
                    {"functions": [fn], "p_function": 1.0, "retain_stats": cfg["retain_stats"], "p_inverse": 0.0},
                    _p(f), f)
            add("InverseTransform", "intensity_function",
                {"functions": [], "p_function": 0.0, "p_inverse": 1.0,
                 "inverse_retain_stats": cfg["inverse_retain_stats"]}, _p(inv), inv, per_sample_coins=True)
        elif _p(f) > 0 or _p(inv) > 0:
            out.append(Entry(source="AugTransformsGPU > RandomFunctionGPU ×5 + RandomInverseGPU", kind="intensity_function",
                             config=cfg, same_on_batch=per_batch))
    b = params.get("HistogramEqualizationTransform")
    if b is not None:
        add("HistogramEqualizationTransform", "histogram_equalization",
            {"retain_stats": bool(b.get("retain_stats", False))}, _p(b), b)
    b = params.get("SimulateLowResTransform")
    if b is not None:
        add("SimulateLowResTransform", "auglab_low_resolution",
            {"mode": "lowres", "scale": [float(v) for v in b.get("scale", [0.3, 1.0])],
             "crop": [float(v) for v in b.get("crop", [1.0, 1.0])]}, _p(b))
    b = params.get("AcqTransform")
    if b is not None:
        crop = [float(v) for v in b.get("crop", [1.0, 1.0])]
        if crop != [1.0, 1.0] and _p(b) > 0:
            raise Untranslatable("AcqTransform.crop < 1: AugLab's RandomAcqTransformGPU itself raises there")
        add("AcqTransform", "auglab_low_resolution",
            {"mode": "acq", "scale": [float(v) for v in b.get("scale", [0.3, 1.0])], "scale_axes": [int(acq_axis)]},
            _p(b))
    b = params.get("BiasFieldTransform")
    if b is not None:
        c = b.get("coefficients", 0.5)
        rng = [-float(c), float(c)] if isinstance(c, (int, float)) else [float(c[0]), float(c[1])]
        add("BiasFieldTransform", "auglab_bias_field",
            {"coefficients": rng, "retain_stats": bool(b.get("retain_stats", False))}, _p(b), b)
    b = params.get("RedistributeSegTransform")
    if b is not None:
        add("RedistributeSegTransform", "redistribute_seg", {"in_seg": float(b.get("in_seg", 0.2)),
                                                             "retain_stats": bool(b.get("retain_stats", False))}, _p(b),
            batch_draws="decision")
    b = params.get("FlipTransform")
    if b is not None:
        fa = b.get("flip_axis", [0])
        axes = [int(fa)] if isinstance(fa, int) else [int(a) for a in fa]
        if per_batch and _p(b) > 0 and len(axes) > 1:
            folded.append("FlipTransform with several flip_axis: AugLab draws the fallback axis (no coin fell) per "
                          "sample; per_batch shares it")
        add("FlipTransform", "auglab_flip", {"flip_axis": axes}, _p(b))
    b = params.get("AffineTransform")
    if b is not None:
        resample = str(b.get("resample", "bilinear")).lower()
        if resample not in ("bilinear", "nearest") and _p(b) > 0:
            raise Untranslatable(f"AffineTransform.resample={resample!r}: kornia knows bilinear / nearest only")
        cfg = auglab_affine_config(b.get("degrees", 10), b.get("translate", [0.1, 0.1, 0.1]),
                                   b.get("scale", [0.9, 1.1]), b.get("shear", [-10, 10, -10, 10, -10, 10]))
        cfg["resample"] = resample
        add("AffineTransform", "auglab_affine", cfg, _p(b))
    b = params.get("ScharrTransform")
    if b is not None:
        kt = str(b.get("kernel_type", "Scharr")).lower()
        add("ScharrTransform", "edge_convolution", {"kernel_type": kt, "absolute": bool(b.get("absolute", True)),
                                                    "retain_stats": bool(b.get("retain_stats", True))}, _p(b), b)
    b = params.get("UnsharpMaskTransform")
    if b is not None:
        add("UnsharpMaskTransform", "unsharp_mask", {"sigma": float(b.get("sigma", 1.0)),
                                                     "unsharp_amount": float(b.get("unsharp_amount", 1.5))}, _p(b), b)
    b = params.get("RandomConvTransform")
    if b is not None:
        add("RandomConvTransform", "random_convolution",
            {"kernel_sizes": [int(k) for k in b.get("kernel_sizes", [1, 3, 5, 7])],
             "mix_prob": float(b.get("mix_prob", 0.0)), "retain_stats": bool(b.get("retain_stats", False))}, _p(b), b,
            batch_draws="decision")
    b = params.get("ZscoreNormalizationTransform")
    if b is not None:
        add("ZscoreNormalizationTransform", "zscore_normalization", {}, _p(b))
    return out


def _kornia_ranges(value: Any, n: int, name: str) -> List[List[float]]:
    """kornia's ``_tuple_range_reader(value, n)``: n (lo, hi) ranges from a number d (±d), one pair (every axis),
    n numbers s_i (±s_i each) or n pairs; each written sorted (kornia's U(hi, lo) is the same distribution)."""
    num = (int, float)
    if isinstance(value, num):
        if value < 0:
            raise Untranslatable(f"AffineTransform.{name}: a single number must be >= 0 (kornia)")
        rs = [[-float(value), float(value)]] * n
    elif isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, num) for v in value):
        rs = [[float(value[0]), float(value[1])]] * n
    elif isinstance(value, (list, tuple)) and len(value) == n and all(isinstance(v, num) for v in value):
        rs = [[-float(v), float(v)] for v in value]
    elif isinstance(value, (list, tuple)) and len(value) == n and all(isinstance(v, (list, tuple)) and len(v) == 2
                                                                      for v in value):
        rs = [[float(v[0]), float(v[1])] for v in value]
    else:
        raise Untranslatable(f"AffineTransform.{name}={value!r}: not a kornia range form for {n} values")
    return [sorted(r) for r in rs]


def auglab_affine_config(degrees: Any = 10, translate: Any = (0.1, 0.1, 0.1), scale: Any = (0.9, 1.1),
                         shears: Any = (-10, 10, -10, 10, -10, 10)) -> Dict[str, Any]:
    """The ``auglab_affine`` config of AugLab's ``RandomAffine3DCustom(degrees, translate, scale, shears)`` (kornia's
    AffineGenerator3D reading of each argument; the defaults are AugLab's ``.get`` defaults)."""
    flat = lambda rs: [v for r in rs for v in r]  # noqa: E731
    if isinstance(scale, (list, tuple)) and len(scale) == 2 and all(isinstance(v, (int, float)) for v in scale):
        sc = [[float(scale[0]), float(scale[1])]] * 3
    elif isinstance(scale, (list, tuple)) and len(scale) == 3 and all(isinstance(v, (list, tuple)) for v in scale):
        sc = [[float(v[0]), float(v[1])] for v in scale]
    else:
        raise Untranslatable(f"AffineTransform.scale={scale!r}: kornia takes (a, b) or ((a, b), (c, d), (e, f))")
    tr = [float(v) for v in translate]
    if len(tr) != 3:
        raise Untranslatable(f"AffineTransform.translate={translate!r}: three fractions (x, y, z)")
    return {"degrees": flat(_kornia_ranges(degrees, 3, "degrees")), "translate": tr,
            "scale": flat(sorted(r) for r in sc), "shear": flat(_kornia_ranges(shears, 6, "shear"))}


def daext_gpu_pipeline(params: Dict[str, Any], patch_size: Sequence[int], acq_axis: int = 0,
                       use_mask_for_norm: Sequence[bool] = (), regions: Optional[Sequence[Sequence[int]]] = None,
                       ignore_label: Optional[int] = None,
                       deep_supervision_scales: Optional[Sequence[Sequence[float]]] = None,
                       per_batch: bool = False) -> Pipeline:
    """nnUNetTrainerDAExtGPU's whole training augmentation (3D, non-cascade) for an input of at least
    `patch_size` (the loader's initial_patch_size crop): CPU part, AugTransformsGPU, DS. `per_batch`: AugLab's
    same_on_batch=True on the GPU entries."""
    # per_batch reproduces AugLab's same_on_batch=True draw by draw (AUGLAB_DAEXT.md, "Per-batch mode"): nothing to
    # list then; per sample is a difference.
    folded: List[str] = [] if per_batch else ["AugTransformsGPU same_on_batch=True: augmentd draws per sample"]
    ps = [int(v) for v in patch_size]
    if len(ps) != 3:
        raise Untranslatable("nnUNetTrainerDAExtGPU's GPU transforms take 3D patches (5D batches) only")
    cpu: List[Entry] = [Entry(source="SpatialTransform (centre crop, p_rotation=0, p_scaling=0)", kind="spatial", config={
        # bgv2 SpatialTransform's defaults for every argument AugLab leaves out
        "patch_size": ps, "patch_center_dist_from_border": [0], "random_crop": False, "p_elastic_deform": 0.0,
        "elastic_deform_scale": [0.0, 0.2], "elastic_deform_magnitude": [0.0, 0.2],
        "p_synchronize_def_scale_across_axes": 0.0, "p_rotation": 0.0,
        "rotation": [-math.pi / 6, math.pi / 6], "p_rot_per_axis": 1.0, "p_scaling": 0.0, "scaling": [0.7, 1.4],
        "p_synchronize_scaling_across_axes": 1.0, "bg_style_seg_sampling": False, "mode_seg": "nearest",
        "border_mode_seg": "zeros", "center_deformation": True, "mode_image": "bilinear",
        "padding_mode_image": "zeros", "padding_value_seg": 0.0, "padding_value_image": 0.0,
        "align_corners": False})]
    if any(use_mask_for_norm):
        cpu.append(Entry(source="MaskImageTransform", kind="mask_image", config={
            "apply_to_channels": [i for i, m in enumerate(use_mask_for_norm) if m], "channel_idx_in_seg": 0,
            "set_outside_to": 0.0}))
    cpu.append(Entry(source="RemoveLabelTansform(-1, 0)", kind="remove_label", config={"label_value": -1, "set_to": 0}))
    if regions is not None:
        if any(float(b.get("in_seg", 0)) > 0 for b in params.values() if isinstance(b, dict)):
            folded.append("region-based training: AugLab's region masks then sum several channels")
        cpu.append(_regions_entry(regions, ignore_label))
    cpu.append(Entry(source="auglab ZscoreNormalization (CPU, channel 0, unbiased std)", kind="zscore_normalization",
                     config={"apply_to_channel": [0], "unbiased": True}))
    gpu = daext_gpu_entries(params, acq_axis, folded, per_batch)
    tail: List[Entry] = []
    if deep_supervision_scales is not None:
        tail.append(Entry(source="DownsampleSegForDSTransformCustom (train_step)", kind="downsample_seg_for_ds",
                          config={"ds_scales": [list(map(float, s)) for s in deep_supervision_scales]}))
    return Pipeline(entries=cpu + gpu + tail, folded=folded, ndim=3)


def _regions_entry(regions, ignore_label) -> Entry:
    rs = [list(r) if isinstance(r, (list, tuple)) else [r] for r in regions]
    if ignore_label is not None:
        rs.append([ignore_label])
    return Entry(source="ConvertSegmentationToRegionsTransform", kind="convert_segmentation_to_regions",
                 config={"regions": rs, "channel_in_seg": 0})


def daext_gpu_validation_pipeline(ndim: int, regions: Optional[Sequence[Sequence[int]]] = None,
                                  ignore_label: Optional[int] = None,
                                  deep_supervision_scales: Optional[Sequence[Sequence[float]]] = None) -> Pipeline:
    """nnUNetTrainerDAExtGPU.get_validation_transforms (non-cascade): RemoveLabel(−1 → 0), regions, AugLab's CPU
    ZscoreNormalization (channel 0, unbiased std), DS."""
    entries = [Entry(source="RemoveLabelTansform(-1, 0)", kind="remove_label", config={"label_value": -1, "set_to": 0})]
    if regions is not None:
        entries.append(_regions_entry(regions, ignore_label))
    entries.append(Entry(source="auglab ZscoreNormalization (CPU, channel 0, unbiased std)",
                         kind="zscore_normalization", config={"apply_to_channel": [0], "unbiased": True}))
    if deep_supervision_scales is not None:
        entries.append(Entry(source="DownsampleSegForDSTransform", kind="downsample_seg_for_ds",
                             config={"ds_scales": [list(map(float, s)) for s in deep_supervision_scales]}))
    return Pipeline(entries=entries, folded=[], ndim=ndim)
