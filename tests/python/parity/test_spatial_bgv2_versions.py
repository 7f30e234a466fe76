"""SpatialTransform parity with batchgeneratorsv2 0.3.5 and 0.3.6 installed side by side.

Both releases are the Python module ``batchgeneratorsv2``, so each runs in its own interpreter
(``bgv2_side.py``) from its own ``pip install --no-deps --target`` folder: ``$AUGMENTD_BGV2_DIRS``
(``"0.3.5=/dir/a,0.3.6=/dir/b"``), else ``.venv/bgv2/<version>`` (scripts/setup.sh installs them there). Each
subprocess builds every case of ``bgv2_side.CASES`` — every case of ``test_spatial_parity.py`` plus cases whose
sampling leaves the image, every ``seg_tiebreak``, 30 labels, natural nnU-Net draws — and returns bgv2's outputs
with the injected parameters; augmentd runs the same parameters with ``bgv2_version`` set to that release.

Images: within 1e-5 of each channel's range. Labels: identical except fp16 ties, i.e. voxels where bgv2's fp32
scores of the two labels (with 0.3.6's padding label scored as bgv2 does: sample of (ind − 1)·1000, plus 1000)
round to fp16 values at most one fp16 ulp apart; the nearest / threshold / crop paths have no fp16 vote and must
match exactly. ``$AUGMENTD_PARITY_REPORT`` (a path): per-case figures as JSON (bench/results uses them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional

import numpy as np
import pytest
import torch
from torch.nn.functional import grid_sample

from augment_capi import REPO_ROOT
from bgv2_ref import assert_float_parity, augmentd_apply

KIND = "spatial"
VERSIONS = ("0.3.5", "0.3.6")
_SIDE = Path(__file__).resolve().parent / "bgv2_side.py"
_STATS: Dict[str, Dict[str, dict]] = {v: {} for v in VERSIONS}


def bgv2_dir(version: str) -> Path:
    spec = os.environ.get("AUGMENTD_BGV2_DIRS", "")
    for item in filter(None, spec.split(",")):
        v, _, d = item.partition("=")
        if v == version:
            return Path(d)
    return REPO_ROOT / ".venv" / "bgv2" / version


def _case_names():
    sys.path.insert(0, str(_SIDE.parent))
    # the case list only (no bgv2 call): bgv2_side imports bgv2_ref, which imports the venv's bgv2 here
    import bgv2_side  # noqa: E402
    return list(bgv2_side.CASES)


CASE_NAMES = _case_names()


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    """{version: npz of every case applicable to it}, computed by that release in its own interpreter."""
    out = {}
    for v in VERSIONS:
        d = bgv2_dir(v)
        if not (d / "batchgeneratorsv2").is_dir():
            pytest.skip(f"batchgeneratorsv2 {v} not installed at {d} (scripts/setup.sh installs it; or set "
                        f"AUGMENTD_BGV2_DIRS=0.3.5=DIR,0.3.6=DIR)")
        path = tmp_path_factory.mktemp(f"bgv2-{v}") / "ref.npz"
        env = dict(os.environ, PYTHONPATH=str(d), BGV2_SIDE_DIR=str(d), OMP_NUM_THREADS="1")
        r = subprocess.run([sys.executable, str(_SIDE), v, str(path)], env=env, capture_output=True, text=True,
                           timeout=1200)
        assert r.returncode == 0, f"bgv2 {v} reference failed:\n{r.stderr[-4000:]}"
        out[v] = np.load(path)
    return out


def _scores_at(plane: np.ndarray, g: np.ndarray, label: int, pad: Optional[int]) -> float:
    """bgv2's fp32 score of ``label`` at one normalised grid point ``g`` (flipped, as grid_sample takes it)."""
    ind = torch.from_numpy(plane == label).float()
    shift = pad is not None and label == pad
    src = (ind - 1) * 1000 if shift else ind * 1000
    gg = torch.from_numpy(np.asarray(g, np.float32)).reshape((1,) * plane.ndim + (1, plane.ndim))
    v = grid_sample(src[None, None], gg, mode="bilinear", padding_mode="zeros", align_corners=False).item()
    return v + 1000 if shift else v


def classify_labels(ours, ref, seg_in, grid, dummy_2d, pad, limit=5000):
    """(mismatches, mismatches that are not fp16 ties, examples)."""
    diff = np.argwhere(ours != ref)
    if len(diff) == 0:
        return 0, 0, []
    if grid.size == 0 or len(diff) > limit:
        return len(diff), len(diff), [tuple(int(x) for x in diff[0])]
    non_tie, examples = 0, []
    for idx in diff:
        idx = tuple(int(x) for x in idx)
        a, b = int(ours[idx]), int(ref[idx])
        if dummy_2d:
            plane, g = seg_in[idx[0], idx[1]], grid[idx[2:]]
        else:
            plane, g = seg_in[idx[0]], grid[idx[1:]]
        sa, sb = (np.float16(_scores_at(plane, g, u, pad)) for u in (a, b))
        ulp = np.spacing(np.float16(max(abs(float(sa)), abs(float(sb)), 1.0)))
        tie = abs(float(sa) - float(sb)) <= float(ulp)
        non_tie += 0 if tie else 1
        if len(examples) < 5:
            examples.append(f"{idx}: augmentd {a} bgv2 {b} scores {float(sa)} {float(sb)}")
    return len(diff), non_tie, examples


def _run_case(capi, version, refs, name):
    key = f"{name}/meta"
    if key not in refs.files:
        pytest.skip(f"case {name} does not apply to bgv2 {version}")
    meta = json.loads(refs[key].tobytes().decode())
    config = dict(meta["config"], bgv2_version=version)
    image, seg = refs[f"{name}/image_in"], refs[f"{name}/seg_in"]
    _, out = augmentd_apply(capi, KIND, config, meta["params"], image=image, seg=seg)
    ref_img, ref_seg, grid = refs[f"{name}/image"], refs[f"{name}/seg"], refs[f"{name}/grid"]
    assert_float_parity(out["image"], ref_img, what=f"{name} image (bgv2 {version})", rel_tol=1e-5)
    assert out["seg"].dtype == ref_seg.dtype and out["seg"].shape == ref_seg.shape
    pad = None
    if version != "0.3.5":
        pad = int(config.get("padding_value_seg", 0)) if config.get("border_mode_seg") == "constant" else 0
    n, non_tie, examples = classify_labels(out["seg"], ref_seg, seg, grid, meta["dummy_2d"], pad)
    exact = grid.size == 0 or config.get("mode_seg") == "nearest" or (
        version == "0.3.5" and config.get("bg_style_seg_sampling", True))
    _STATS[version][name] = {"voxels": int(ref_seg.size), "mismatch": n, "non_tie": non_tie,
                             "outside": name.startswith("outside") or "border" in name}
    assert non_tie == 0, f"{name} (bgv2 {version}): {non_tie} of {n} label mismatches are not fp16 ties: {examples}"
    if exact:
        assert n == 0, f"{name} (bgv2 {version}): no fp16 vote on this path, yet {n} labels differ: {examples}"
    # fp16 ties are rare: a few per 10^4 label voxels at most
    assert n <= max(3, 1e-4 * ref_seg.size), f"{name} (bgv2 {version}): {n} tie mismatches of {ref_seg.size}"
    return out, ref_seg


@pytest.mark.parametrize("name", CASE_NAMES)
@pytest.mark.parametrize("version", VERSIONS)
def test_spatial_matches_bgv2_release(capi, references, version, name):
    _run_case(capi, version, references[version], name)


@pytest.mark.parametrize("name", [n for n in CASE_NAMES if n.startswith("outside")])
def test_outside_cases_tell_the_releases_apart(capi, references, name):
    """The cases whose sampling leaves the image must be sensitive to the release: bgv2 0.3.5 and 0.3.6 give
    different labels there (else they would not test the pad-first vote), and augmentd follows each."""
    if f"{name}/meta" not in references["0.3.5"].files:
        pytest.skip("0.3.6-only case (seg_tiebreak other than 'lowest')")
    a, b = references["0.3.5"][f"{name}/seg"], references["0.3.6"][f"{name}/seg"]
    assert (a != b).mean() > 1e-3, f"{name}: bgv2 0.3.5 and 0.3.6 agree on {(a == b).mean():.4%} of the labels"


def test_zz_version_figures():
    """Max label mismatch fraction over cases per release (ties excluded: must be 0) and the tie fraction."""
    report = {}
    for v in VERSIONS:
        st = _STATS[v]
        if not st:
            pytest.skip("run the whole module")
        report[v] = {
            "cases": len(st),
            "non_tie_fraction_max": max(s["non_tie"] / s["voxels"] for s in st.values()),
            "tie_fraction_max": max(s["mismatch"] / s["voxels"] for s in st.values()),
            "tie_fraction_total": sum(s["mismatch"] for s in st.values()) / sum(s["voxels"] for s in st.values()),
            "cases_detail": st,
        }
        print(f"bgv2 {v}: {len(st)} cases, non-tie mismatch max {report[v]['non_tie_fraction_max']:.3g}, "
              f"tie mismatch max {report[v]['tie_fraction_max']:.3g}, total {report[v]['tie_fraction_total']:.3g}")
        assert report[v]["non_tie_fraction_max"] == 0
    path = os.environ.get("AUGMENTD_PARITY_REPORT")
    if path:
        Path(path).write_text(json.dumps(report, indent=1))
