"""The ``cores`` stage (issue 26): its table and figures arithmetic, and a tiny CPU dry run of the real stage
(run_e2e.py --stages cores: real nnU-Net trainers, the real augmentd binary, taskset) — orchestration, not timings.
"""
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
from cores_table import cores_figures, epoch_seconds, pct_over, render_cores  # noqa: E402


def _run(kind, aug, cores, median, mean, util=90.0, sps=10.0):
    return dict(stage="cores", kind=kind, aug=aug, cores=cores, n_proc_da=cores - 1, label=f"cores{cores}-{aug}-{kind}",
                ms_per_iter_median=median, ms_per_iter_mean=mean, gpu_util_mean=util, samples_per_s=sps)


META = {"date": "2026-12-01 15:00 UTC", "machine": "test machine", "dataset": {}, "warmup": 5, "iters": 60,
        "run_seconds": 8, "command": "E2E_STAGES=cores E2E_CORES=2,4 scripts/gpu-e2e.sh"}


def test_pct_and_epoch_time():
    c, b = _run("c", "default", 4, 66.3, 66.5), _run("b", "default", 4, 67.1, 207.0)
    assert math.isclose(pct_over(b, c), 100 * (67.1 / 66.3 - 1))
    assert math.isclose(pct_over(b, c, "mean"), 100 * (207.0 / 66.5 - 1))
    assert math.isclose(epoch_seconds(b), 250 * 0.207)  # the mean: an epoch is the sum of its iterations
    assert pct_over(dict(b, ms_per_iter_median=None), c) is None
    assert pct_over(b, None) is None and epoch_seconds(None) is None


def test_table_and_figures_each_n_with_its_own_compute():
    rows = [_run("c", "default", 2, 66.0, 66.0), _run("b", "default", 2, 69.3, 70.0),
            _run("a", "default", 2, 132.0, 264.0, util=28.0, sps=5.0),
            _run("c", "default", 4, 66.3, 66.3), _run("b", "default", 4, 67.1, 67.5),
            _run("a", "default", 4, 123.0, 207.0),
            _run("c", "da5", 4, 66.9, 66.9), _run("b", "da5", 4, 68.2, 68.2)]
    rows.append(dict(stage="cores", kind="a", aug="da5", cores=4, label="cores4-da5-nnunet", error="exit timeout"))
    table = render_cores(rows, META)
    assert "E2E_STAGES=cores E2E_CORES=2,4 scripts/gpu-e2e.sh" in table and "test machine" in table
    assert ("| 2 (1) | 66.0 / 66.0 ms, GPU busy 90 %, 10.0 samples/s, epoch 16 s | "
            "69.3 / 70.0 ms (+5.0 % / +6.1 %), GPU busy 90 %, 10.0 samples/s, epoch 18 s | "
            "132.0 / 264.0 ms (+100.0 % / +300.0 %), GPU busy 28 %, 5.0 samples/s, epoch 66 s |") in table
    assert "FAILED: exit timeout" in table
    assert table.index("### default augmentation") < table.index("### DA5 augmentation")
    figs = {f["metric"]: f for f in cores_figures(rows, META)}
    assert sorted(figs) == ["e2e_cores2_default_pct_augmentd", "e2e_cores2_default_pct_nnunet",
                            "e2e_cores4_da5_pct_augmentd", "e2e_cores4_default_pct_augmentd",
                            "e2e_cores4_default_pct_nnunet"]  # the failed run has no figure
    f = figs["e2e_cores4_default_pct_nnunet"]
    assert f["value"] == round(100 * (123.0 / 66.3 - 1), 2) and f["unit"] == "%" and f["issue"] == 26
    assert f["date"] == "2026-12-01" and f["machine"] == "test machine" and f["baseline"]["value"] == 66.3
    assert json.loads(json.dumps(f)) == f


def test_compute_once_is_the_baseline_of_every_n():
    rows = [_run("c", "da5", 2, 50.0, 50.0), _run("b", "da5", 2, 51.0, 52.0), _run("a", "da5", 2, 400.0, 500.0),
            _run("b", "da5", 16, 50.5, 51.0), _run("a", "da5", 16, 60.0, 80.0),
            dict(stage="cores", kind="b", aug="da5", cores=64, label="x", skipped="only 16 cores available")]
    table = render_cores(rows, META)
    assert "| 16 (15) | (measured at N = 2) 50.0 / 50.0 ms" in table
    assert "| 64 (63) | – | skipped: only 16 cores available | – |" in table  # nothing measured: no baseline shown
    figs = {f["metric"]: f["value"] for f in cores_figures(rows, META)}
    assert figs == {"e2e_cores2_da5_pct_augmentd": 2.0, "e2e_cores2_da5_pct_nnunet": 700.0,
                    "e2e_cores16_da5_pct_augmentd": 1.0, "e2e_cores16_da5_pct_nnunet": 20.0}
    assert render_cores([dict(stage="default", kind="c")], META) == ""


def test_cpu_list():
    from run_e2e import cpu_list, pinned_cpus

    assert cpu_list([0, 1, 2, 3]) == "0-3" and cpu_list([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8" and cpu_list([3]) == "3"
    assert pinned_cpus(1) == sorted(os.sched_getaffinity(0))[:1]
    assert pinned_cpus(len(os.sched_getaffinity(0)) + 1) is None


@pytest.fixture(scope="module")
def tiny_e2e_dataset(tmp_path_factory):
    pytest.importorskip("nnunetv2")
    work = tmp_path_factory.mktemp("e2e_cores")
    out = subprocess.run([sys.executable, str(HERE / "make_dataset.py"), "--work", str(work), "--cases", "4",
                          "--shape", "24", "--np", "1"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return work


def _augmentd_bin() -> str:
    build = os.environ.get("AUGMENTD_BUILD_DIR", str(REPO / "build"))
    path = os.environ.get("AUGMENTD_BIN") or str(Path(build) / "server" / "augmentd")
    if not Path(path).is_file():
        pytest.skip(f"augmentd binary not built: {path} (set AUGMENTD_BIN)")
    return path


def test_cores_stage_dry_run_on_cpu(tiny_e2e_dataset, tmp_path):
    """The real stage at N = 1 (pinned to one core, nnU-Net's single-threaded loader) and an N this machine does
    not have (recorded as skipped): 3 real training processes, a table, figures."""
    if shutil.which("taskset") is None:
        pytest.skip("taskset (util-linux) not on PATH")
    out_dir = tmp_path / "out"
    env = dict(os.environ, AUGMENTD_BIN=_augmentd_bin(), E2E_MACHINE="ci cpu")
    cmd = [sys.executable, str(HERE / "run_e2e.py"), "--work", str(tiny_e2e_dataset), "--out", str(out_dir),
           "--stages", "cores", "--cores", "1,100000", "--cores-aug", "default", "--device", "cpu", "--iters", "2",
           "--warmup", "1", "--run-seconds", "20", "--min-run-seconds", "5", "--cpu-threads", "1", "--deadline", "280"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=320, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    results = [json.loads(line) for line in (out_dir / "results.jsonl").read_text().splitlines()]
    done = {r["label"]: r for r in results if "ms_per_iter_median" in r}
    assert sorted(done) == ["cores1-default-augmentd", "cores1-default-compute", "cores1-default-nnunet"]
    assert all(r["cores"] == 1 and r["cpus"] == str(sorted(os.sched_getaffinity(0))[0]) for r in done.values())
    assert done["cores1-default-nnunet"]["delivery"] == "nnunet" and done["cores1-default-nnunet"]["iters"] == 2
    assert done["cores1-default-augmentd"]["delivery"] in ("host_shm", "inline")
    skipped = [r for r in results if r.get("cores") == 100000]
    assert len(skipped) == 3 and all("cores available" in r["skipped"] for r in skipped)
    table = (out_dir / "table.md").read_text()
    assert "| 1 (0) | " in table and "skipped: only" in table and "## End-to-end" not in table
    figures = [json.loads(line) for line in (out_dir / "figures-cores.jsonl").read_text().splitlines()]
    assert [f["metric"] for f in figures] == ["e2e_cores1_default_pct_augmentd", "e2e_cores1_default_pct_nnunet"]
    assert all(f["machine"] == "ci cpu" and math.isfinite(f["value"]) for f in figures)
