"""The batchgeneratorsv2 (bgv2 0.3.5) side of the parity tests.

* ``build_bgv2(kind, config)`` builds the real bgv2 transform from the *same* JSON config that is sent to
  augmentd (constructor argument names of bgv2; ``{"bg_contrast": [lo, hi]}`` stands for ``BGContrast((lo, hi))``;
  lists become tuples).
* ``params_to_json(kind, params)`` converts a dict returned by bgv2's ``get_parameters`` into the JSON form the
  C ABI takes (same keys; tensors and arrays as nested lists; SpatialTransform's derived ``grid`` is dropped,
  augmentd rebuilds it from ``affine``, ``elastic_offsets`` and ``center_location_in_pixels``).
* ``draw_bgv2_params`` seeds numpy and torch and draws bgv2 parameters; ``apply_bgv2`` applies a transform
  with a given parameter dict to copies of the inputs.
* Input generators (never zeros) and comparison helpers with the tolerances of issue 3.
"""

from __future__ import annotations

import copy
from importlib.metadata import version as _dist_version
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest
import torch
from torch.nn.functional import grid_sample

from batchgeneratorsv2.transforms.base.basic_transform import BasicTransform
from batchgeneratorsv2.transforms.intensity.brightness import MultiplicativeBrightnessTransform
from batchgeneratorsv2.transforms.intensity.contrast import BGContrast, ContrastTransform
from batchgeneratorsv2.transforms.intensity.gamma import GammaTransform
from batchgeneratorsv2.transforms.intensity.gaussian_noise import GaussianNoiseTransform
from batchgeneratorsv2.transforms.noise.gaussian_blur import GaussianBlurTransform
from batchgeneratorsv2.transforms.spatial.low_resolution import SimulateLowResolutionTransform
from batchgeneratorsv2.transforms.spatial.mirroring import MirrorTransform
from batchgeneratorsv2.transforms.spatial.spatial import SpatialTransform
from batchgeneratorsv2.transforms.utils.deep_supervision_downsampling import DownsampleSegForDSTransform
from batchgeneratorsv2.transforms.utils.nnunet_masking import MaskImageTransform
from batchgeneratorsv2.transforms.utils.remove_label import RemoveLabelTransform
from batchgeneratorsv2.transforms.utils.seg_to_regions import ConvertSegmentationToRegionsTransform
# nnUNetTrainerDA5's extra transforms (reference §5.1)
from batchgeneratorsv2.transforms.intensity.brightness import BrightnessAdditiveTransform
from batchgeneratorsv2.transforms.noise.blank_rectangle import BlankRectangleTransform
from batchgeneratorsv2.transforms.noise.median_filter import MedianFilterTransform
from batchgeneratorsv2.transforms.noise.rician import RicianNoiseTransform
from batchgeneratorsv2.transforms.noise.sharpen import SharpeningTransform
from batchgeneratorsv2.transforms.local.brightness_gradient import BrightnessGradientAdditiveTransform
from batchgeneratorsv2.transforms.local.local_gamma import LocalGammaTransform
from batchgeneratorsv2.transforms.spatial.rot90 import Rot90Transform
from batchgeneratorsv2.transforms.spatial.transpose import TransposeAxesTransform

# augmentd transform kind (lower-case, C ABI) -> bgv2 class.
KIND_TO_CLASS = {
    "spatial": SpatialTransform,
    "gaussian_noise": GaussianNoiseTransform,
    "gaussian_blur": GaussianBlurTransform,
    "multiplicative_brightness": MultiplicativeBrightnessTransform,
    "contrast": ContrastTransform,
    "simulate_low_resolution": SimulateLowResolutionTransform,
    "gamma": GammaTransform,
    "mirror": MirrorTransform,
    "mask_image": MaskImageTransform,
    "remove_label": RemoveLabelTransform,
    "convert_segmentation_to_regions": ConvertSegmentationToRegionsTransform,
    "downsample_seg_for_ds": DownsampleSegForDSTransform,
    "blank_rectangle": BlankRectangleTransform,
    "brightness_additive": BrightnessAdditiveTransform,
    "sharpening": SharpeningTransform,
    "median_filter": MedianFilterTransform,
    "brightness_gradient_additive": BrightnessGradientAdditiveTransform,
    "local_gamma": LocalGammaTransform,
    "rot90": Rot90Transform,
    "transpose_axes": TransposeAxesTransform,
    "rician_noise": RicianNoiseTransform,
}

# Which inputs each kind reads/writes (for building requests and choosing what to compare).
IMAGE_ONLY = {"gaussian_noise", "gaussian_blur", "multiplicative_brightness", "contrast",
              "simulate_low_resolution", "gamma", "blank_rectangle", "brightness_additive", "sharpening",
              "median_filter", "brightness_gradient_additive", "local_gamma", "rician_noise"}
SEG_ONLY = {"remove_label", "convert_segmentation_to_regions", "downsample_seg_for_ds"}

# augmentd extensions of the bgv2 configs that bgv2's constructors do not take. ``dummy_2d`` (spatial): augmentd
# folds axis 0 into channels around the transform itself; on the bgv2 side the caller runs Convert3DTo2D /
# Convert2DTo3D around the 2D SpatialTransform.
AUGMENTD_ONLY_KEYS = {"dummy_2d", "bgv2_version"}

#: The batchgeneratorsv2 release of this environment: augmentd is told to follow it (``bgv2_version`` of the
#: spatial configs and trainer configs the tests send), as the nnU-Net client does.
INSTALLED_BGV2 = _dist_version("batchgeneratorsv2")

# Constructor arguments that only select a faster code path in bgv2 (same math); the bgv2 reference is built
# with the deterministic path so that float comparisons are not at the mercy of a timing benchmark.
_REFERENCE_OVERRIDES = {"gaussian_blur": {"benchmark": False}}


# --------------------------------------------------------------------------------------------------------------
# nnU-Net 2.8.1 default-trainer configurations (nnUNetTrainer.get_training_transforms), as JSON configs.
# --------------------------------------------------------------------------------------------------------------

ROT_3D = [-30.0 / 360 * 2.0 * np.pi, 30.0 / 360 * 2.0 * np.pi]
ROT_DUMMY_2D = [-180.0 / 360 * 2.0 * np.pi, 180.0 / 360 * 2.0 * np.pi]


def nnunet_spatial_config(patch_size: Sequence[int], rotation: Sequence[float] = ROT_3D, **overrides) -> dict:
    cfg = dict(patch_size=list(patch_size), patch_center_dist_from_border=0, random_crop=False,
               p_elastic_deform=0, p_rotation=0.2, rotation=list(rotation), p_scaling=0.2, scaling=[0.7, 1.4],
               p_synchronize_scaling_across_axes=1, bg_style_seg_sampling=False, border_mode_seg="constant",
               padding_value_seg=-1)
    cfg.update(overrides)
    return cfg


NNUNET_CONFIGS: Dict[str, Tuple[str, dict, float]] = {
    # name: (kind, config, RandomTransform apply_probability)
    "gaussian_noise": ("gaussian_noise", dict(noise_variance=[0, 0.1], p_per_channel=1,
                                              synchronize_channels=True), 0.1),
    "gaussian_blur": ("gaussian_blur", dict(blur_sigma=[0.5, 1.0], synchronize_channels=False,
                                            synchronize_axes=False, p_per_channel=0.5, benchmark=True), 0.2),
    "multiplicative_brightness": ("multiplicative_brightness",
                                  dict(multiplier_range={"bg_contrast": [0.75, 1.25]}, synchronize_channels=False,
                                       p_per_channel=1), 0.15),
    "contrast": ("contrast", dict(contrast_range={"bg_contrast": [0.75, 1.25]}, preserve_range=True,
                                  synchronize_channels=False, p_per_channel=1), 0.15),
    "simulate_low_resolution": ("simulate_low_resolution",
                                dict(scale=[0.5, 1], synchronize_channels=False, synchronize_axes=True,
                                     ignore_axes=None, allowed_channels=None, p_per_channel=0.5), 0.25),
    "gamma_inverted": ("gamma", dict(gamma={"bg_contrast": [0.7, 1.5]}, p_invert_image=1,
                                     synchronize_channels=False, p_per_channel=1, p_retain_stats=1), 0.1),
    "gamma": ("gamma", dict(gamma={"bg_contrast": [0.7, 1.5]}, p_invert_image=0, synchronize_channels=False,
                            p_per_channel=1, p_retain_stats=1), 0.3),
    "mirror": ("mirror", dict(allowed_axes=[0, 1, 2]), 1.0),
}


# --------------------------------------------------------------------------------------------------------------
# Config (JSON) -> bgv2 objects
# --------------------------------------------------------------------------------------------------------------

def _axis_size_log_uniform(a: float, b: float):
    """The C ABI's {"axis_size_log_uniform": [a, b]}: nnU-Net DA5's scale callable for [6, 1]."""
    def f(shape, dim):
        return np.exp(np.random.uniform(np.log(shape[dim] // a), np.log(shape[dim] // b)))
    return f


def _mixture(components):
    """The C ABI's {"mixture": [{"weight", "range"}...]}: one coin, then U(range) (DA5's strength/gamma)."""
    def f(*_args):
        u, acc = np.random.uniform(), 0.0
        for i, c in enumerate(components):
            acc += c["weight"]
            if u < acc or i == len(components) - 1:
                return np.random.uniform(*c["range"])
    return f


def _to_bgv2_value(v: Any) -> Any:
    if isinstance(v, dict) and set(v) == {"bg_contrast"}:
        return BGContrast(tuple(v["bg_contrast"]))
    if isinstance(v, dict) and set(v) == {"axis_size_log_uniform"}:
        return _axis_size_log_uniform(*v["axis_size_log_uniform"])
    if isinstance(v, dict) and set(v) == {"mixture"}:
        return _mixture(v["mixture"])
    if isinstance(v, list):
        return tuple(_to_bgv2_value(x) for x in v)
    return v


def build_bgv2(kind: str, config: dict) -> BasicTransform:
    """The bgv2 transform for an augmentd ``{"kind", "config"}`` spec (same constructor arguments)."""
    cls = KIND_TO_CLASS[kind]
    kwargs = {k: _to_bgv2_value(v) for k, v in config.items() if k not in AUGMENTD_ONLY_KEYS}
    kwargs.update(_REFERENCE_OVERRIDES.get(kind, {}))
    if kind in ("mask_image",) and "apply_to_channels" in kwargs:
        kwargs["apply_to_channels"] = list(kwargs["apply_to_channels"])
    if kind == "convert_segmentation_to_regions":
        kwargs["regions"] = [r if isinstance(r, int) else tuple(r) for r in config["regions"]]
    if kind == "downsample_seg_for_ds":
        kwargs["ds_scales"] = [list(s) if isinstance(s, (list, tuple)) else s for s in config["ds_scales"]]
    if kind == "blank_rectangle" and kwargs.get("rectangle_value") == "mean":
        kwargs["rectangle_value"] = torch.mean  # the C ABI spells DA5's callable "mean"
    if kind in ("rot90", "transpose_axes") and "allowed_axes" in kwargs:
        kwargs["allowed_axes"] = set(kwargs["allowed_axes"])
    return cls(**kwargs)


# --------------------------------------------------------------------------------------------------------------
# bgv2 params -> JSON
# --------------------------------------------------------------------------------------------------------------

def to_jsonable(v: Any) -> Any:
    """Tensors/arrays -> nested lists, numpy scalars -> Python scalars, recursively."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, torch.Tensor):
        return v.detach().cpu().tolist()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, dict):
        return {str(k): to_jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [to_jsonable(x) for x in v]
    raise TypeError(f"cannot convert {type(v)} to JSON")


def params_to_json(kind: str, params: dict) -> dict:
    """bgv2 ``get_parameters()`` dict -> C ABI params (same keys; SpatialTransform drops the derived grid)."""
    p = dict(params)
    if kind == "spatial":
        p.pop("grid", None)
    return to_jsonable(p)


# --------------------------------------------------------------------------------------------------------------
# Drawing and applying on the bgv2 side
# --------------------------------------------------------------------------------------------------------------

def seed_all(seed: int) -> None:
    np.random.seed(seed)
    torch.manual_seed(seed)


def draw_bgv2_params(transform: BasicTransform, image: np.ndarray, seed: int, **extra) -> dict:
    """bgv2's own ``get_parameters`` with numpy and torch seeded (bgv2 mixes both generators). A SpatialTransform's
    grid without elastic offsets is then rebuilt by ``spatial_grid_from_params``: the same statements without the
    BLAS call, so the reference is the same on every CPU (bgv2's float32 ``torch.matmul`` rounds by the CPU's
    MKL / SIMD path: CI on another machine would compare against other bits)."""
    seed_all(seed)
    params = transform.get_parameters(image=torch.from_numpy(image), **extra)
    if isinstance(transform, SpatialTransform) and params.get("grid") is not None \
            and params.get("elastic_offsets") is None:
        params = dict(params, grid=spatial_grid_from_params(transform, params["affine"],
                                                            params["center_location_in_pixels"], image.shape[1:]))
    return params


def apply_bgv2(transform: BasicTransform, params: dict, image: Optional[np.ndarray] = None,
               seg: Optional[np.ndarray] = None) -> Dict[str, Any]:
    """Applies ``transform`` with injected ``params`` to *copies* of the inputs (bgv2 works in place).

    Returns ``{"image": ndarray?, "seg": ndarray or list of ndarrays?}``.
    """
    dd: Dict[str, Any] = {}
    if image is not None:
        dd["image"] = torch.from_numpy(np.array(image, copy=True))
    if seg is not None:
        dd["segmentation"] = torch.from_numpy(np.array(seg, copy=True))
    with torch.no_grad():
        out = transform.apply(dd, **copy.deepcopy(params))
    res: Dict[str, Any] = {}
    if out.get("image") is not None:
        res["image"] = out["image"].numpy()
    if out.get("segmentation") is not None:
        s = out["segmentation"]
        res["seg"] = [x.numpy() for x in s] if isinstance(s, (list, tuple)) else s.numpy()
    return res


def augmentd_apply(capi, kind: str, config: dict, params: dict, image: Optional[np.ndarray] = None,
                   seg: Optional[np.ndarray] = None) -> Tuple[Any, Dict[str, np.ndarray]]:
    """``apply_transform`` through the C ABI with injected (JSON) params."""
    if kind == "spatial":
        config = {"bgv2_version": INSTALLED_BGV2, **config}
    req = {"op": "apply_transform", "transform": {"kind": kind, "config": config}, "params": params}
    arrays = {}
    if image is not None:
        arrays["image"] = image
    if seg is not None:
        arrays["seg"] = seg
    return capi.run(req, **arrays)


def shape_channel_cases(shapes: Dict[str, Sequence[int]], channels: Sequence[int]):
    """``pytest.param(shape_name, c)`` for every named shape × channel count (ids like ``iso-3ch``)."""
    for shape_name in shapes:
        for c in channels:
            yield pytest.param(shape_name, c, id=f"{shape_name}-{c}ch")


def run_image_parity(capi, kind: str, config: dict, params: dict, image: np.ndarray):
    """augmentd's and bgv2's output images, and augmentd's JSON reply, for injected bgv2 ``params``."""
    transform = build_bgv2(kind, config)
    ref = apply_bgv2(transform, params, image=image)["image"]
    j, out = augmentd_apply(capi, kind, config, params_to_json(kind, params), image=image)
    assert "image" in out, f"augmentd returned no image tensor (got {sorted(out)})"
    return out["image"], ref, j


def check_image_parity(capi, kind: str, config: dict, params: dict, image: np.ndarray, exact: bool = False,
                       what: str = "image"):
    """Runs both sides (``run_image_parity``) and asserts their images agree: bit-identical when ``exact``, else
    within ``assert_float_parity``'s tolerance. Returns (augmentd image, bgv2 image)."""
    ours, ref, _ = run_image_parity(capi, kind, config, params, image)
    if exact:
        assert ours.dtype == ref.dtype and ours.shape == ref.shape, f"{ours.dtype}{ours.shape} vs {ref.dtype}{ref.shape}"
        bad = np.argwhere(ours != ref)
        assert len(bad) == 0, f"{kind} {what}: {len(bad)} voxels differ, e.g. {bad[:3].tolist()}"
    else:
        assert_float_parity(ours, ref, what=f"{kind} {what}")
    return ours, ref


# --------------------------------------------------------------------------------------------------------------
# Inputs (fresh, random, never zeros)
# --------------------------------------------------------------------------------------------------------------

def _smooth_field(rng: np.random.Generator, shape: Sequence[int], cells: int = 4) -> np.ndarray:
    """A smooth random field: coarse Gaussian noise upsampled trilinearly to ``shape``."""
    coarse = torch.from_numpy(rng.standard_normal([max(2, min(cells, s)) for s in shape]).astype(np.float32))
    mode = {1: "linear", 2: "bilinear", 3: "trilinear"}[len(shape)]
    up = torch.nn.functional.interpolate(coarse[None, None], size=tuple(shape), mode=mode, align_corners=True)
    return up[0, 0].numpy()


def fixed_geometry_config(config: dict, *, angles=None, scales=None) -> dict:
    """A SpatialTransform config whose rotation / scaling ranges are degenerate at ``angles`` / ``scales`` (one
    value per axis; None: that draw is off, the integer-crop path when both are), elastic deformation off: bgv2's
    own ``get_parameters`` then draws exactly those values (a callable RandomScalar gets dim=i)."""
    cfg = dict(config)
    if angles is not None:
        cfg["p_rotation"] = 1
        cfg["rotation"] = lambda image, dim, _a=tuple(angles): _a[dim] if len(_a) > 1 else _a[0]
    else:
        cfg["p_rotation"] = 0
    if scales is not None:
        cfg["p_scaling"] = 1
        cfg["p_synchronize_scaling_across_axes"] = 0
        cfg["scaling"] = lambda image, dim, _s=tuple(scales): _s[dim]
    else:
        cfg["p_scaling"] = 0
    cfg["p_elastic_deform"] = 0
    return cfg


def make_image(rng: np.random.Generator, channels: int, shape: Sequence[int]) -> np.ndarray:
    """float32 (C, *shape): smooth structure + voxel noise, per-channel offset/scale; no exact zeros."""
    out = np.empty((channels, *shape), np.float32)
    for c in range(channels):
        x = 2.0 * _smooth_field(rng, shape) + 0.5 * rng.standard_normal(shape).astype(np.float32)
        x = x * rng.uniform(0.5, 3.0) + rng.uniform(-2.0, 2.0)
        x[x == 0] = 1e-3
        out[c] = x
    return out


def make_seg(rng: np.random.Generator, shape: Sequence[int], n_labels: int, *, minus_one: bool = True,
             ignore_label: Optional[int] = None, channels: int = 1) -> np.ndarray:
    """int16 (channels, *shape) label map with blobs of labels 0..n_labels-1 (all present), optionally a −1
    region (nnU-Net's 'outside the non-zero mask') and an ignore-label region."""
    out = np.empty((channels, *shape), np.int16)
    for c in range(channels):
        fields = np.stack([_smooth_field(rng, shape, cells=5) for _ in range(n_labels)])
        fields[0] += 0.3  # a bit more background
        seg = np.argmax(fields, 0).astype(np.int16)
        # make sure every label is present
        flat = seg.reshape(-1)
        idx = rng.choice(flat.size, size=n_labels, replace=False)
        flat[idx] = np.arange(n_labels, dtype=np.int16)
        if minus_one:
            corner = tuple(slice(0, max(1, s // 4)) for s in shape)
            seg[corner] = -1
        if ignore_label is not None:
            # an unannotated box near the centre (kept by a centre crop)
            box = tuple(slice(s // 2 - max(1, s // 8), s // 2 + max(1, s // 8) // 2) for s in shape)
            seg[box] = ignore_label
        out[c] = seg
    return out


# --------------------------------------------------------------------------------------------------------------
# Comparisons
# --------------------------------------------------------------------------------------------------------------

@dataclass
class FloatReport:
    max_abs_err: float
    value_range: float
    worst_index: Tuple[int, ...]
    worst_ours: float
    worst_ref: float

    def __str__(self) -> str:
        return (f"max abs err {self.max_abs_err:.3g} (range {self.value_range:.3g}, "
                f"rel {self.max_abs_err / max(self.value_range, 1e-30):.3g}) at {self.worst_index}: "
                f"augmentd {self.worst_ours!r} vs bgv2 {self.worst_ref!r}")


def compare_float(ours: np.ndarray, ref: np.ndarray) -> FloatReport:
    assert ours.shape == ref.shape, f"shape {ours.shape} != bgv2 {ref.shape}"
    d = np.abs(ours.astype(np.float64) - ref.astype(np.float64))
    d[np.isnan(d)] = np.inf
    i = np.unravel_index(int(np.argmax(d)), d.shape) if d.size else ()
    rng_ = float(ref.max() - ref.min()) if ref.size else 0.0
    return FloatReport(float(d.max()) if d.size else 0.0, rng_, tuple(int(x) for x in i),
                       float(ours[i]) if d.size else 0.0, float(ref[i]) if d.size else 0.0)


def assert_float_parity(ours: np.ndarray, ref: np.ndarray, what: str = "image", rel_tol: float = 1e-4,
                        per_channel: bool = True) -> None:
    """max |ours − ref| ≤ rel_tol × value range of the bgv2 output (issue 3), per channel (axis 0) unless
    ``per_channel`` is False, so that a small-range channel is not judged by a large-range neighbour's scale.
    dtype and shape must match too."""
    assert ours.dtype == ref.dtype, f"{what}: dtype {ours.dtype} != bgv2 {ref.dtype}"
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape} != bgv2 {ref.shape}"
    pairs = [(f"{what} channel {c}", ours[c], ref[c]) for c in range(ours.shape[0])] \
        if per_channel and ours.ndim >= 2 else [(what, ours, ref)]
    for name, o, r_ in pairs:
        r = compare_float(o, r_)
        tol = rel_tol * max(r.value_range, 1e-6)
        assert r.max_abs_err <= tol, f"{name}: {r} > tol {tol:.3g}"


def seg_scores_fp32(seg: np.ndarray, grid: torch.Tensor) -> Tuple[np.ndarray, np.ndarray]:
    """bgv2's per-label scores (1000·one-hot, trilinear grid_sample, fp32) for a (C,*S) seg: returns
    (labels, scores (C, L, *patch)) per channel stacked (channels must share labels: use C=1)."""
    assert seg.shape[0] == 1
    labels = np.unique(seg[0])
    st = torch.from_numpy(seg[0])
    scores = []
    for u in labels:
        onehot = (st == int(u)).float() * 1000
        scores.append(grid_sample(onehot[None, None], grid[None], mode="bilinear", padding_mode="zeros",
                                  align_corners=False)[0, 0].numpy())
    return labels, np.stack(scores)[None]


@dataclass
class LabelReport:
    n_voxels: int
    n_mismatch: int
    n_non_tie: int
    examples: List[str] = field(default_factory=list)

    @property
    def fraction(self) -> float:
        return self.n_mismatch / max(self.n_voxels, 1)

    def __str__(self) -> str:
        return (f"{self.n_mismatch}/{self.n_voxels} label voxels differ (fraction {self.fraction:.3g}), "
                f"{self.n_non_tie} not explained by fp16 ties; e.g. {self.examples[:5]}")


# Session-wide tally of label mismatches that were fp16 near-ties (reported and bounded by test_zz_*).
TIE_LEDGER = {"voxels": 0, "mismatch": 0}


def compare_labels(ours: np.ndarray, ref: np.ndarray, *, seg_in: Optional[np.ndarray] = None,
                   grid: Optional[torch.Tensor] = None) -> LabelReport:
    """Exact label comparison. When ``seg_in`` and ``grid`` (bgv2's grid) are given, each differing voxel is
    classified: an fp16 near-tie is one where bgv2's fp32 scores of the two labels round to fp16 values at most
    one fp16 ulp apart (the only documented source of disagreement)."""
    assert ours.shape == ref.shape, f"seg shape {ours.shape} != bgv2 {ref.shape}"
    diff = np.argwhere(ours != ref)
    rep = LabelReport(int(ours.size), int(len(diff)), 0)
    if len(diff) == 0:
        return rep
    scores = None
    if seg_in is not None and grid is not None and seg_in.shape[0] == 1:
        labels, scores = seg_scores_fp32(seg_in, grid)
    for idx in diff:
        idx_t = tuple(int(x) for x in idx)
        a, b = int(ours[idx_t]), int(ref[idx_t])
        tie = False
        if scores is not None and a in labels and b in labels:
            sa = np.float16(scores[(0, int(np.searchsorted(labels, a))) + idx_t[1:]])
            sb = np.float16(scores[(0, int(np.searchsorted(labels, b))) + idx_t[1:]])
            ulp = np.spacing(np.float16(max(abs(float(sa)), abs(float(sb)), 1.0)))
            tie = abs(float(sa) - float(sb)) <= float(ulp)
        if not tie:
            rep.n_non_tie += 1
        if len(rep.examples) < 10:
            rep.examples.append(f"{idx_t}: augmentd {a} bgv2 {b}{' (fp16 tie)' if tie else ''}")
    return rep


def assert_label_parity(ours: np.ndarray, ref: np.ndarray, *, seg_in: Optional[np.ndarray] = None,
                        grid: Optional[torch.Tensor] = None, what: str = "seg") -> LabelReport:
    """Labels identical except fp16 ties (each mismatch must be one; the session-wide fraction is bounded by
    1e-6 in the spatial module's last test). dtype must match."""
    assert ours.dtype == ref.dtype, f"{what}: dtype {ours.dtype} != bgv2 {ref.dtype}"
    rep = compare_labels(ours, ref, seg_in=seg_in, grid=grid)
    TIE_LEDGER["voxels"] += rep.n_voxels
    TIE_LEDGER["mismatch"] += rep.n_mismatch
    assert rep.n_non_tie == 0, f"{what}: {rep}"
    return rep


def assert_labels_equal_up_to_grid_rounding(transform: SpatialTransform, params: dict, ours: np.ndarray,
                                            ref: np.ndarray, seg_in: np.ndarray, what: str = "seg") -> int:
    """Labels of a seg mode without fp16 scores (``mode_seg='nearest'``, ``bg_style_seg_sampling``): identical,
    except where bgv2's own label flips when its grid moves by a few float32 ulps. bgv2's grid is a float32
    torch.matmul whose rounding depends on the CPU's BLAS path (issue 19), so a voxel sampled at a rounding
    boundary (nearest: half-way between voxels; bg-style: interpolated one-hot at 0.5) is a tie, not a defect.
    Such ties are rare (a position within ~1e-5 voxel of a boundary): more than 1e-4 of the voxels is a defect
    (e.g. a different rounding rule at exact half-voxel positions), tie or not. Returns the number of ties."""
    assert ours.dtype == ref.dtype, f"{what}: dtype {ours.dtype} != bgv2 {ref.dtype}"
    diff = ours != ref
    if not diff.any():
        return 0
    assert diff.mean() <= 1e-4, f"{what}: {int(diff.sum())}/{diff.size} labels differ, too many for grid ties"
    explained = np.zeros_like(diff)
    for nudge in (-1e-6, 1e-6):  # ~8 ulps of a normalised coordinate near ±1; a BLAS path moves it by ~1
        p = dict(params, grid=params["grid"] + nudge)
        alt = apply_bgv2(transform, p, seg=seg_in)["seg"]
        explained |= diff & (alt == ours)
    bad = [tuple(int(x) for x in i) for i in np.argwhere(diff & ~explained)]
    assert not bad, (f"{what}: {len(bad)} of {int(diff.sum())} differing labels are not grid-rounding ties, "
                     f"e.g. {[(i, int(ours[i]), int(ref[i])) for i in bad[:5]]}")
    return int(diff.sum())


# --------------------------------------------------------------------------------------------------------------
# JSON params -> bgv2 params (to replay parameters reported by augmentd through bgv2)
# --------------------------------------------------------------------------------------------------------------

def spatial_grid_from_params(transform: SpatialTransform, affine, center, input_shape: Sequence[int]):
    """bgv2's grid for given ``affine`` / ``center_location_in_pixels`` (no elastic offsets): the statements of
    ``SpatialTransform.get_parameters`` after the draws, except that ``grid @ affine.T`` is written out as float32
    products summed left to right (each op correctly rounded: the same bits on every x86-64 CPU, where bgv2's
    ``torch.matmul`` goes through MKL / SIMD paths that round differently, FMA or not)."""
    from batchgeneratorsv2.transforms.spatial.spatial import _convert_my_grid_to_grid_sample_grid
    if affine is None:
        return None
    base = transform._get_base_grid_clone()
    a = torch.from_numpy(np.asarray(affine, dtype=np.float64)).float()
    rows = []
    for r in range(a.shape[0]):
        acc = base[..., 0] * a[r, 0]
        for k in range(1, a.shape[1]):
            acc = acc + base[..., k] * a[r, k]
        rows.append(acc)
    grid = torch.stack(rows, -1)
    new_center = torch.Tensor([c - s / 2 for c, s in zip(center, input_shape)])
    grid += new_center
    return _convert_my_grid_to_grid_sample_grid(grid, input_shape)


def params_from_json(kind: str, transform: BasicTransform, p: dict, image_shape: Sequence[int]) -> dict:
    """C ABI params (bgv2 keys, lists) -> the tensors bgv2's ``apply`` expects. ``image_shape`` is (C, *spatial)
    of the sample the transform sees (for spatial: the folded shape in dummy-2D)."""
    p = dict(p)
    if kind == "spatial":
        assert p.get("elastic_offsets") is None, "replay of elastic offsets not supported"
        aff = p.get("affine")
        p["affine"] = None if aff is None else np.asarray(aff, dtype=np.float64)
        p["grid"] = spatial_grid_from_params(transform, aff, p["center_location_in_pixels"], image_shape[1:])
        return p
    out = {}
    for k, v in p.items():
        if k == "apply_to_channel" and kind == "gaussian_blur":
            out[k] = torch.tensor(v, dtype=torch.bool)
        elif k in ("apply_to_channel", "apply_idx"):
            out[k] = torch.tensor(v if v is not None else [], dtype=torch.long)
        elif k in ("apply_mask", "retain_stats", "invert_image"):
            out[k] = None if v is None else torch.tensor(v, dtype=torch.bool)
        elif k in ("multipliers", "gamma", "scales"):
            out[k] = None if v is None else torch.tensor(v, dtype=torch.float32)
        else:
            out[k] = v
    return out
