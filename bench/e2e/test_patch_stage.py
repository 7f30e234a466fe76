"""The ``patch`` / ``patch_da5`` stages (issue 22): table and figures arithmetic, and a tiny CPU dry run of the real
stage (run_e2e.py --stages patch: real nnU-Net trainers, nnUNetTrainerAugmentdPatch, the real augmentd binary,
taskset) — orchestration, not timings."""
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from patch_table import patch_figures, pct_median, render_patch  # noqa: E402
from test_cores import _augmentd_bin, tiny_e2e_dataset  # noqa: E402,F401  (the fixture)

import pytest  # noqa: E402


def _run(kind, aug, cores, median, mean=None):
    return dict(stage="patch", kind=kind, aug=aug, cores=cores, n_proc_da=cores - 1, label=f"patch{cores}-{aug}-{kind}",
                ms_per_iter_median=median, ms_per_iter_mean=mean or median, gpu_util_mean=95.0, samples_per_s=30.0,
                delivery="cuda_ipc" if kind == "b" else "none (fixed GPU batch)")


META = {"date": "2026-12-01 18:00 UTC", "machine": "test machine", "dataset": {}, "warmup": 8, "iters": 60,
        "run_seconds": 8, "command": "E2E_STAGES=patch,patch_da5 scripts/gpu-e2e.sh"}


def test_pct_table_and_figures():
    rows = [_run("c", "default", 16, 65.0), _run("b", "default", 16, 66.3),
            _run("c", "default", 4, 66.0), _run("b", "default", 4, 70.62),
            _run("c", "da5", 16, 67.0), _run("b", "da5", 16, 67.67),
            dict(stage="patch", kind="b", aug="da5", cores=4, label="patch4-da5-b", error="exit timeout"),
            dict(stage="default", kind="c", label="default-compute", ms_per_iter_median=1.0)]  # another stage
    assert math.isclose(pct_median(rows[1], rows[0]), 100 * (66.3 / 65.0 - 1))
    assert pct_median(rows[1], None) is None and pct_median(dict(rows[1], ms_per_iter_median=None), rows[0]) is None
    table = render_patch(rows, META)
    assert "E2E_STAGES=patch,patch_da5 scripts/gpu-e2e.sh" in table and "test machine" in table
    assert "| 16 (15) | 65.0 / 65.0 ms" in table and "(+2.0 % / +2.0 %)" in table and "≤ 3 %: met" in table
    assert "| 4 (3) |" in table and "(+7.0 % / +7.0 %)" in table and "≤ 5 %: **missed**" in table
    assert "FAILED: exit timeout" in table
    assert table.index("### default augmentation") < table.index("### DA5 augmentation")
    figs = {f["metric"]: f for f in patch_figures(rows, META)}
    assert sorted(figs) == ["e2e_patch_pct_da5_16c", "e2e_patch_pct_default_16c", "e2e_patch_pct_default_4c"]
    f = figs["e2e_patch_pct_default_4c"]
    assert f["value"] == round(100 * (70.62 / 66.0 - 1), 2) and f["unit"] == "%" and f["issue"] == 22
    assert f["baseline"]["value"] == 66.0 and f["date"] == "2026-12-01" and f["delivery"] == "cuda_ipc"
    assert json.loads(json.dumps(f)) == f
    assert render_patch([dict(stage="cores", kind="c")], META) == ""


def test_compute_once_serves_every_n():
    rows = [_run("c", "default", 16, 50.0), _run("b", "default", 16, 51.0), _run("b", "default", 4, 52.0)]
    table = render_patch(rows, META)
    assert "| 4 (3) | (measured at N = 16) 50.0 / 50.0 ms" in table
    figs = {f["metric"]: f["value"] for f in patch_figures(rows, META)}
    assert figs == {"e2e_patch_pct_default_16c": 2.0, "e2e_patch_pct_default_4c": 4.0}


def test_patch_stage_dry_run_on_cpu(tiny_e2e_dataset, tmp_path):  # noqa: F811
    """The real stage at N = 1 (pinned to one core: one loader thread, nnUNet_n_proc_DA = 0) and an N this machine
    does not have (recorded as skipped): compute only and nnUNetTrainerAugmentdPatch, a table, figures."""
    if shutil.which("taskset") is None:
        pytest.skip("taskset (util-linux) not on PATH")
    out_dir = tmp_path / "out"
    env = dict(os.environ, AUGMENTD_BIN=_augmentd_bin(), E2E_MACHINE="ci cpu")
    cmd = [sys.executable, str(HERE / "run_e2e.py"), "--work", str(tiny_e2e_dataset), "--out", str(out_dir),
           "--stages", "patch", "--patch-cores", "1,100000", "--device", "cpu", "--iters", "2", "--warmup", "1",
           "--run-seconds", "20", "--min-run-seconds", "5", "--cpu-threads", "1", "--deadline", "280"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=320, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    results = [json.loads(line) for line in (out_dir / "results.jsonl").read_text().splitlines()]
    done = {r["label"]: r for r in results if "ms_per_iter_median" in r}
    assert sorted(done) == ["patch1-default-augmentd-patch", "patch1-default-compute"]
    assert all(r["stage"] == "patch" and r["cores"] == 1 and r["cpus"] == str(sorted(os.sched_getaffinity(0))[0])
               for r in done.values())
    assert done["patch1-default-augmentd-patch"]["iters"] == 2
    assert done["patch1-default-augmentd-patch"]["delivery"] in ("host_shm", "inline")
    skipped = [r for r in results if r.get("cores") == 100000]
    assert len(skipped) == 2 and all("cores available" in r["skipped"] for r in skipped)
    table = (out_dir / "table.md").read_text()
    assert "## Patch mode" in table and "| 1 (1) | " in table and "## End-to-end" not in table
    figures = [json.loads(line) for line in (out_dir / "figures-patch.jsonl").read_text().splitlines()]
    assert [f["metric"] for f in figures] == ["e2e_patch_pct_default_1c"]
    assert all(f["machine"] == "ci cpu" and math.isfinite(f["value"]) for f in figures)
