"""One batchgeneratorsv2 release's SpatialTransform outputs for the side-by-side version parity suite.

``test_spatial_bgv2_versions.py`` runs this file once per release, in its own interpreter, with that release's
``pip install --no-deps --target DIR`` folder first on ``PYTHONPATH`` (both releases are the module
``batchgeneratorsv2``, so they cannot share one process)::

    BGV2_SIDE_DIR=DIR PYTHONPATH=DIR python tests/python/parity/bgv2_side.py 0.3.6 OUT.npz [case ...]

For every case of ``CASES`` it builds the inputs (seeded, never zeros), bgv2's parameters (drawn by bgv2's own
``get_parameters`` or built with it at chosen angles / scales) and bgv2's outputs, and stores them with the
augmentd config (bgv2 constructor arguments + augmentd's ``bgv2_version`` / ``dummy_2d``) and the parameters in
the C ABI's JSON form. Parameters do not depend on the release (``get_parameters`` is the same in 0.3.5 and
0.3.6), so both subprocesses inject identical parameters.

The case list covers every case of ``test_spatial_parity.py`` plus cases whose sampling leaves the image.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import torch

import batchgeneratorsv2.transforms.spatial.spatial as bgv2_spatial
from batchgeneratorsv2.transforms.utils.pseudo2d import Convert2DTo3DTransform, Convert3DTo2DTransform

from bgv2_ref import (ROT_DUMMY_2D, apply_bgv2, build_bgv2, draw_bgv2_params, fixed_geometry_config, make_image,
                      make_seg, nnunet_spatial_config, params_to_json, seed_all)

KIND = "spatial"
GEOMETRIES = {"iso": ((45, 45, 45), (32, 32, 32)), "aniso": ((21, 57, 50), (16, 40, 36))}


def _inputs(seed, channels, shape, n_labels, **seg_kw):
    rng = np.random.default_rng(seed)
    return make_image(rng, channels, shape), make_seg(rng, shape, n_labels, **seg_kw)


def _bgv2_config(config: dict) -> dict:
    """The config bgv2 is built with: ``seg_tiebreak`` only where the release has it (0.3.6+)."""
    cfg = dict(config)
    if not has_seg_tiebreak():
        cfg.pop("seg_tiebreak", None)  # draws do not depend on it; main() skips cases that need it
    return cfg


def has_seg_tiebreak() -> bool:
    from batchgeneratorsv2.transforms.spatial.spatial import SpatialTransform
    return "seg_tiebreak" in inspect.signature(SpatialTransform.__init__).parameters


def _params(config, image, *, angles=None, scales=None):
    """bgv2 params for given angles / scales (None: the integer-crop path), drawn by bgv2 from degenerate
    ranges (as test_spatial_parity._params)."""
    cfg = fixed_geometry_config(config, angles=angles, scales=scales)
    return draw_bgv2_params(build_bgv2(KIND, _bgv2_config(cfg)), image, 0)


# A case: name -> () -> (config, image, seg, params, dummy_2d)
Case = Tuple[dict, np.ndarray, np.ndarray, dict, bool]
CASES: Dict[str, Callable[[], Case]] = {}


def _case(name: str):
    def register(fn):
        CASES[name] = fn
        return fn
    return register


def _drawn(geom, channels, n_labels, seed):
    S, p = GEOMETRIES[geom]
    image, seg = _inputs(1000 + channels * 10 + n_labels, channels, S, n_labels)
    config = nnunet_spatial_config(p, p_rotation=1.0, p_scaling=1.0)
    return config, image, seg, draw_bgv2_params(build_bgv2(KIND, config), image, seed + n_labels), False


for _g in GEOMETRIES:
    for _c, _n in [(1, 2), (4, 8), (1, 8), (4, 2)]:
        for _s in (1, 2):
            _case(f"drawn-{_g}-{_c}ch-{_n}labels-seed{_s}")(lambda g=_g, c=_c, n=_n, s=_s: _drawn(g, c, n, s))


def _branch_seeds() -> Dict[Tuple[bool, bool], int]:
    seen = {}
    for seed in range(200):
        seed_all(seed)
        u = np.random.uniform(size=2)
        seen.setdefault((bool(u[0] < 0.2), bool(u[1] < 0.2)), seed)
        if len(seen) == 4:
            break
    return seen


def _branch(geom, rot, scale):
    S, p = GEOMETRIES[geom]
    image, seg = _inputs(2000, 2, S, 4)
    config = nnunet_spatial_config(p)
    seed = _branch_seeds()[(rot, scale)]
    return config, image, seg, draw_bgv2_params(build_bgv2(KIND, config), image, seed), False


for _g in GEOMETRIES:
    for _r in (False, True):
        for _sc in (False, True):
            _case(f"branch-{_g}-rot{int(_r)}-scale{int(_sc)}")(lambda g=_g, r=_r, s=_sc: _branch(g, r, s))


@_case("ignore-label")
def _ignore_label():
    S, p = GEOMETRIES["aniso"]
    image, seg = _inputs(2100, 1, S, 3, ignore_label=3)
    config = nnunet_spatial_config(p, p_rotation=1.0, p_scaling=1.0)
    return config, image, seg, draw_bgv2_params(build_bgv2(KIND, config), image, 21), False


@_case("outside-labels-2-3-4-scale1.35")
def _nonzero_lowest():
    S, p = (30, 44, 38), (24, 36, 30)
    rng = np.random.default_rng(2200)
    image = make_image(rng, 1, S)
    seg = make_seg(rng, S, 3, minus_one=False) + 2
    config = nnunet_spatial_config(p)
    return config, image, seg, _params(config, image, angles=[0.3, -0.4, 0.5], scales=[1.35] * 3), False


@_case("two-seg-channels")
def _two_channels():
    S, p = GEOMETRIES["aniso"]
    rng = np.random.default_rng(2300)
    image = make_image(rng, 2, S)
    seg = np.concatenate([make_seg(rng, S, 3), make_seg(rng, S, 5, minus_one=False) + 1])
    config = nnunet_spatial_config(p, p_rotation=1.0, p_scaling=1.0)
    return config, image, seg, draw_bgv2_params(build_bgv2(KIND, config), image, 23), False


@_case("outside-patch-larger-than-input")
def _larger():
    S, p = (20, 30, 28), (26, 24, 33)
    image, seg = _inputs(2400, 1, S, 4)
    config = nnunet_spatial_config(p)
    return config, image, seg, _params(config, image, angles=[0.2, -0.1, 0.4], scales=[0.9] * 3), False


@_case("realistic-205-to-128")
def _realistic():
    S, p = (205, 205, 205), (128, 128, 128)
    image, seg = _inputs(2500, 1, S, 4)
    config = nnunet_spatial_config(p)
    return config, image, seg, _params(config, image, angles=[0.41, -0.23, 0.12], scales=[1.17] * 3), False


for _S, _p in [((45, 44, 43), (32, 32, 32)), ((16, 40, 36), (16, 40, 36)), ((20, 30, 28), (26, 24, 33))]:
    def _crop(S=_S, p=_p):
        image, seg = _inputs(3000 + sum(S), 4, S, 5)
        config = nnunet_spatial_config(p)
        return config, image, seg, _params(config, image), False
    _case(f"crop-{'x'.join(map(str, _S))}-to-{'x'.join(map(str, _p))}")(_crop)

for _S, _p in [((41, 40, 39), (32, 32, 32)), ((9, 10, 9), (4, 4, 4))]:
    def _half(S=_S, p=_p):
        image, seg = _inputs(3100 + S[0], 2, S, 3)
        config = nnunet_spatial_config(p)
        return config, image, seg, _params(config, image, angles=[0.0, 0.0, 0.0]), False
    _case(f"half-voxel-{'x'.join(map(str, _S))}")(_half)

for _S, _p, _sc in [((10, 20, 40), (10, 20, 40), 1.05), ((21, 57, 50), (16, 40, 36), 1.4),
                    ((41, 41, 41), (32, 32, 32), 1.4)]:
    def _border(S=_S, p=_p, scale=_sc):
        image, seg = _inputs(3200 + S[1], 1, S, 3, minus_one=False)
        seg[seg == 0] = 1
        config = nnunet_spatial_config(p)
        return config, image, seg, _params(config, image, scales=[scale] * 3), False
    _case(f"outside-border-{'x'.join(map(str, _S))}-scale{_sc}")(_border)


def _dummy_2d(channels, n_labels, seed):
    S3, p3 = (8, 61, 52), (8, 48, 40)
    image, seg = _inputs(4000 + channels, channels, S3, n_labels)
    config = nnunet_spatial_config(p3[1:], rotation=ROT_DUMMY_2D, p_rotation=1.0, p_scaling=1.0)
    dd = Convert3DTo2DTransform()(image=torch.from_numpy(image.copy()), segmentation=torch.from_numpy(seg.copy()))
    params = draw_bgv2_params(build_bgv2(KIND, config), dd["image"].numpy(), seed, segmentation=dd["segmentation"])
    return config, image, seg, params, True


for _c, _n in [(1, 2), (4, 8)]:
    for _s in (41, 42, 43):
        _case(f"dummy2d-{_c}ch-{_n}labels-seed{_s}")(lambda c=_c, n=_n, s=_s: _dummy_2d(c, n, s))


@_case("dummy2d-crop")
def _dummy_2d_crop():
    S3, p3 = (6, 41, 36), (6, 32, 32)
    image, seg = _inputs(4100, 2, S3, 3)
    config = nnunet_spatial_config(p3[1:], rotation=ROT_DUMMY_2D)
    folded = image.reshape(-1, *S3[1:])
    return config, image, seg, _params(config, folded), True


def _elastic(seed, only_elastic):
    S, p = (20, 26, 23), (14, 18, 16)
    image, seg = _inputs(6000, 2, S, 4)
    config = nnunet_spatial_config(p, p_rotation=1.0, p_scaling=1.0, p_elastic_deform=1.0,
                                   elastic_deform_scale=[0.05, 0.2], elastic_deform_magnitude=[1.0, 3.0])
    if only_elastic:
        config = dict(config, p_rotation=0.0, p_scaling=0.0, center_deformation=False)
    return config, image, seg, draw_bgv2_params(build_bgv2(KIND, config), image, seed), False


_case("elastic-seed61")(lambda: _elastic(61, False))
_case("elastic-seed62")(lambda: _elastic(62, False))
_case("elastic-only-uncentred")(lambda: _elastic(63, True))

VARIANTS = {
    "seg-nearest": dict(mode_seg="nearest"),
    "seg-image-nearest": dict(mode_seg="nearest", mode_image="nearest"),
    "zeros-border": dict(border_mode_seg="zeros", padding_value_seg=0),
    "bg-style": dict(bg_style_seg_sampling=True),
    "image-constant": dict(padding_mode_image="constant", padding_value_image=-3.5),
}


def _variant(name, seed, extra=None):
    S, p = (21, 57, 50), (16, 40, 36)
    image, seg = _inputs(6100, 2, S, 5)
    config = nnunet_spatial_config(p, p_rotation=1.0, p_scaling=1.0, **VARIANTS[name], **(extra or {}))
    if seed == 72:  # pushed out of the image
        return config, image, seg, _params(config, image, angles=[0.3, 0.2, -0.4], scales=[1.4] * 3), False
    return config, image, seg, draw_bgv2_params(build_bgv2(KIND, config), image, seed), False


for _v in VARIANTS:
    _case(f"variant-{_v}-seed71")(lambda v=_v: _variant(v, 71))
    _case(f"outside-variant-{_v}-seed72")(lambda v=_v: _variant(v, 72))


def _random_crop(affine, seed):
    S, p = (30, 40, 36), (16, 20, 24)
    image, seg = _inputs(6200, 1, S, 3)
    config = nnunet_spatial_config(p, random_crop=True, patch_center_dist_from_border=[2, 5, 30],
                                   p_rotation=float(affine), p_scaling=float(affine))
    return config, image, seg, draw_bgv2_params(build_bgv2(KIND, config), image, seed), False


for _a in (False, True):
    for _s in range(81, 85):
        _case(f"random-crop-affine{int(_a)}-seed{_s}")(lambda a=_a, s=_s: _random_crop(a, s))


# ---- new: sampling that leaves the image, every seg_tiebreak, many labels, two labels, natural draws ----------

def _outside(seed, n_labels, scale, tiebreak=None, border="constant", minus_one=True, shape=None, patch=None):
    S, p = shape or (40, 44, 38), patch or (36, 40, 36)
    image, seg = _inputs(7000 + seed, 1, S, n_labels, minus_one=minus_one)
    extra = {} if tiebreak is None else {"seg_tiebreak": tiebreak}
    if border == "zeros":
        extra.update(border_mode_seg="zeros", padding_value_seg=0)
    config = nnunet_spatial_config(p, **extra)
    rng = np.random.default_rng(seed)
    angles = list(rng.uniform(-0.5, 0.5, 3))
    return config, image, seg, _params(config, image, angles=angles, scales=[scale] * 3), False


for _tb in ("nearest", "lowest", "highest"):
    _case(f"outside-tiebreak-{_tb}-5labels")(lambda tb=_tb: _outside(1, 5, 1.4, tb))
    _case(f"outside-tiebreak-{_tb}-2labels-no-minus-one")(lambda tb=_tb: _outside(2, 2, 1.3, tb, minus_one=False))
    _case(f"outside-tiebreak-{_tb}-zeros-border")(lambda tb=_tb: _outside(3, 4, 1.35, tb, border="zeros"))
_case("outside-30-labels")(lambda: _outside(4, 30, 1.25))
_case("inside-30-labels")(lambda: _outside(5, 30, 0.8))
_case("outside-one-label-plus-pad")(lambda: _outside(6, 1, 1.4, minus_one=False))


def _natural(seed):
    """nnU-Net's own configuration and draws at 64³ (initial patch of a 48³ patch would be larger; here the
    enlarged crop is only slightly larger than the patch so that scaled draws leave it)."""
    S, p = (66, 66, 66), (64, 64, 64)
    image, seg = _inputs(8000, 1, S, 4)
    config = nnunet_spatial_config(p)
    return config, image, seg, draw_bgv2_params(build_bgv2(KIND, config), image, seed), False


NATURAL_SEEDS = list(range(900, 940))
for _s in NATURAL_SEEDS:
    _case(f"natural-64-seed{_s}")(lambda s=_s: _natural(s))


def reference(name: str) -> Optional[Dict[str, np.ndarray]]:
    """bgv2's outputs for case ``name`` with the release on sys.path (None: the case needs a newer release)."""
    config, image, seg, params, dummy_2d = CASES[name]()
    if config.get("seg_tiebreak", "lowest") != "lowest" and not has_seg_tiebreak():
        return None
    t = build_bgv2(KIND, _bgv2_config(config))
    if dummy_2d:
        to2d, to3d = Convert3DTo2DTransform(), Convert2DTo3DTransform()
        dd = to2d(image=torch.from_numpy(image.copy()), segmentation=torch.from_numpy(seg.copy()))
        with torch.no_grad():
            dd = to3d(**t.apply(dd, **params))
        ref = {"image": dd["image"].numpy(), "seg": dd["segmentation"].numpy()}
    else:
        ref = apply_bgv2(t, params, image=image, seg=seg)
    grid = params.get("grid")
    meta = {"config": dict(config, dummy_2d=True) if dummy_2d else config,
            "params": params_to_json(KIND, params), "dummy_2d": dummy_2d}
    return {"image_in": image, "seg_in": seg, "image": ref["image"], "seg": ref["seg"],
            "grid": np.zeros(0, np.float32) if grid is None else grid.numpy(),
            "meta": np.frombuffer(json.dumps(meta).encode(), np.uint8)}


def main(argv: List[str]) -> int:
    version, out = argv[1], argv[2]
    names = argv[3:] or list(CASES)
    from importlib.metadata import version as dist_version
    installed = dist_version("batchgeneratorsv2")
    where = os.environ.get("BGV2_SIDE_DIR", "")
    if installed != version or not where or not bgv2_spatial.__file__.startswith(where):
        print(f"bgv2_side: wanted batchgeneratorsv2 {version} from BGV2_SIDE_DIR={where!r}, got {installed} at "
              f"{bgv2_spatial.__file__}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    arrays = {}
    for name in names:
        for k, v in (reference(name) or {}).items():
            arrays[f"{name}/{k}"] = v
    np.savez(out, **arrays)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
