"""Issue 24's e2e stages ``2d`` and ``cascade`` (run_e2e.py): a tiny CPU dry run of the real stages — make_dataset.py
with ``--configurations 3d_fullres,2d --cascade`` (nnU-Net's planning and preprocessing, the cascade's plans and
faked previous-stage predictions), then compute only and nnUNetTrainerAugmentd on ``2d`` and ``3d_cascade_fullres``
(4 real training processes), the table and the figures ``e2e_2d_pct`` / ``e2e_cascade_pct``.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
from run_e2e import configuration_figures  # noqa: E402


def test_configuration_figures_arithmetic():
    results = [{"stage": "2d", "kind": "c", "ms_per_iter_median": 100.0},
               {"stage": "2d", "kind": "b", "ms_per_iter_median": 102.5, "delivery": "cuda_ipc"},
               {"stage": "cascade", "kind": "c", "ms_per_iter_median": 50.0},
               {"stage": "cascade", "kind": "b", "error": "exit 1"}]
    figs = configuration_figures(results, {"date": "2026-12-01 17:00 UTC", "machine": "h200"})
    assert [f["metric"] for f in figs] == ["e2e_2d_pct"]  # a failed run gives no figure
    assert figs[0]["value"] == 2.5 and figs[0]["baseline"]["value"] == 100.0 and figs[0]["date"] == "2026-12-01"


def _augmentd_bin() -> str:
    build = os.environ.get("AUGMENTD_BUILD_DIR", str(REPO / "build"))
    path = os.environ.get("AUGMENTD_BIN") or str(Path(build) / "server" / "augmentd")
    if not Path(path).is_file():
        pytest.skip(f"augmentd binary not built: {path} (set AUGMENTD_BIN)")
    return path


def test_2d_and_cascade_stages_dry_run_on_cpu(tmp_path):
    pytest.importorskip("nnunetv2")
    work = tmp_path / "work"
    out = subprocess.run([sys.executable, str(HERE / "make_dataset.py"), "--work", str(work), "--cases", "4",
                          "--shape", "24", "--np", "1", "--configurations", "3d_fullres,2d", "--cascade"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    pre = next((work / "preprocessed").iterdir())
    plans = json.loads((pre / "nnUNetPlans.json").read_text())["configurations"]
    assert plans["3d_cascade_fullres"]["previous_stage"] == "3d_lowres" and (pre / "nnUNetPlans_2d").is_dir()
    out_dir = tmp_path / "out"
    env = dict(os.environ, AUGMENTD_BIN=_augmentd_bin(), E2E_MACHINE="ci cpu")
    cmd = [sys.executable, str(HERE / "run_e2e.py"), "--work", str(work), "--out", str(out_dir), "--stages",
           "2d,cascade", "--device", "cpu", "--iters", "2", "--warmup", "1", "--run-seconds", "20",
           "--min-run-seconds", "5", "--cpu-threads", "1", "--deadline", "400", "--delivery", "auto"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=440, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    results = [json.loads(line) for line in (out_dir / "results.jsonl").read_text().splitlines()]
    done = {r["label"]: r for r in results if "ms_per_iter_median" in r}
    assert sorted(done) == ["2d-augmentd", "2d-compute", "cascade-augmentd", "cascade-compute"], results
    assert len(done["2d-compute"]["patch_size"]) == 2 and len(done["cascade-compute"]["patch_size"]) == 3
    assert done["cascade-augmentd"]["delivery"] in ("host_shm", "inline")
    table = (out_dir / "table.md").read_text()
    assert "configuration 2d" in table and "configuration 3d_cascade_fullres" in table
    figures = [json.loads(line) for line in (out_dir / "figures-configurations.jsonl").read_text().splitlines()]
    assert [f["metric"] for f in figures] == ["e2e_2d_pct", "e2e_cascade_pct"]
    assert all(math.isfinite(f["value"]) and f["machine"] == "ci cpu" for f in figures)
