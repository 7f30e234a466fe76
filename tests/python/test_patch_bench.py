"""bench/patch_bench.py (issue 22): the phase arithmetic and a tiny CPU dry run against the real binary
(orchestration and table layout, not timings)."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import augmentd_server  # noqa: F401  (puts the client package on sys.path)

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("patch_bench", REPO / "bench" / "patch_bench.py")
patch_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(patch_bench)


def test_phase_medians_and_table():
    calls = [{"submit": 0.1, "request": 0.3, "compute": 0.2, "sync": 0.01},
             {"submit": 0.3, "request": 0.1, "compute": 0.4, "sync": 0.03},
             {"submit": 0.2, "request": 0.2, "compute": 0.3, "sync": 0.02}]
    med = patch_bench.phase_medians(calls)
    assert med == pytest.approx({"submit": 0.2, "request": 0.2, "compute": 0.3, "sync": 0.02})
    assert patch_bench.phase_medians([]) == {}
    rows = [{"case": "cuda_ipc in + out", "batch": 2, "patch": 128, "phases": med},
            {"case": "baseline", "batch": 2, "patch": 128, "phases": {}}]
    lines = patch_bench.phase_table(rows)
    header = [ln for ln in lines if ln.startswith("| case")][0]
    assert header.split(" | ")[3:-1] == list(patch_bench.PHASES)
    row = [ln for ln in lines if ln.startswith("| cuda_ipc")][0]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3] == "0.200" and cells[5] == "—" and cells[-1] == f"{0.2 + 0.2 + 0.3 + 0.02:.3f}"
    assert not any(ln.startswith("| baseline") for ln in lines)  # no phases: no row
    assert patch_bench.phase_table(rows[1:]) == []


def test_cpu_dry_run(tmp_path):
    binary = os.environ.get("AUGMENTD_BIN") or str(Path(os.environ.get("AUGMENTD_BUILD_DIR", REPO / "build"))
                                                   / "server" / "augmentd")
    if not Path(binary).is_file():
        pytest.skip(f"augmentd binary not built: {binary}")
    out, figures = tmp_path / "patch.md", tmp_path / "figures.jsonl"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "patch_bench.py"), "--bin", binary, "--device", "cpu",
                           "--patch", "16", "--big-patch", "0", "--iters", "5", "--warmup", "1",
                           "--cases", "host_shm,inline,baseline", "--out", str(out), "--figures", str(figures)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    text = out.read_text()
    rows = [ln for ln in text.splitlines() if ln.startswith("| host_shm") or ln.startswith("| inline")
            or ln.startswith("| baseline")]
    # the results table (session on, output on) and the phase table (host_shm and inline: StreamPatches calls)
    assert len([r for r in rows if r.endswith("| cpu | cpu |")]) == 3
    phase_rows = [r for r in rows if not r.endswith("| cpu | cpu |")]
    assert [r.split(" | ")[0] for r in phase_rows] == ["| host_shm in + out (host tensors)",
                                                      "| inline both ways (StreamPatches)"]
    assert all(len(r.strip("|").split("|")) == 3 + len(patch_bench.PHASES) + 1 for r in phase_rows)
    assert not figures.exists()  # figures only for the standard CUDA configuration


def test_cpu_dry_run_with_the_untuned_inline_baseline(tmp_path):
    binary = os.environ.get("AUGMENTD_BIN") or str(Path(os.environ.get("AUGMENTD_BUILD_DIR", REPO / "build"))
                                                   / "server" / "augmentd")
    if not Path(binary).is_file():
        pytest.skip(f"augmentd binary not built: {binary}")
    import json

    out, rows_json = tmp_path / "patch.md", tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "patch_bench.py"), "--bin", binary, "--device", "cpu",
                           "--patch", "16", "--big-patch", "0", "--iters", "3", "--warmup", "1", "--cases", "inline",
                           "--inline-baseline", "--out", str(out), "--json", str(rows_json)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = json.loads(rows_json.read_text())
    assert [r["case"] for r in rows] == ["before (AUGMENTD_MALLOC_TUNING=0): inline both ways",
                                         "inline both ways (StreamPatches)"]
    assert all(r["phases"] and r["gbps"] > 0 for r in rows)
    table = [ln for ln in out.read_text().splitlines() if ln.startswith("| before") or ln.startswith("| inline")]
    assert len(table) == 4  # each in the results and the phase table
