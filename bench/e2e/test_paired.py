"""paired.py: the phase order, what is timed, the pair arithmetic, the table and the figures (train_driver.py
--mode paired and stage ``paired`` of run_e2e.py use them)."""
import math
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from paired import parse_runs, paired_figures, render_paired, run_phases, summarize_pairs, verdict  # noqa: E402


def test_phases_alternate_c_first_and_time_only_after_settling():
    calls = []

    def step(kind, wait, dur):
        def one():
            calls.append(kind)
            return wait, dur, 1.0
        return one

    marks = []
    out = run_phases(step("c", 0.0, 0.010), step("b", 0.001, 0.011), pairs=3, iters=4, settle=2,
                     on_phase=lambda kind, k: marks.append(("on", kind, k)),
                     after_phase=lambda kind, k: marks.append(("after", kind, k)))
    assert calls == (["c"] * 6 + ["b"] * 6) * 3  # settle 2 + 4 timed, c then b, three times
    assert marks[:4] == [("on", "c", 0), ("after", "c", 0), ("on", "b", 0), ("after", "b", 0)]
    assert len(out["c"]) == len(out["b"]) == len(out["b_wait"]) == 3
    assert all(len(p) == 4 for p in out["c"] + out["b"])  # settling iterations are not in the phases
    assert out["c"][0][0] == pytest.approx(0.010) and out["b"][0][0] == pytest.approx(0.012)  # wait + step
    assert out["b_wait"][0] == [0.001] * 4 and len(out["losses"]) == 3 * 2 * 4


def test_pairs_figure_is_the_median_of_the_pairs():
    phases = {"c": [[0.100, 0.100, 0.300], [0.110, 0.110, 0.110], [0.100, 0.100, 0.100]],
              "b": [[0.102, 0.102, 0.0], [0.121, 0.121, 0.121], [0.103, 0.103, 0.103]],
              "b_wait": [[0.0, 0.001, 0.0], [0.0, 0.0, 0.0], [0.002, 0.0, 0.0]]}
    s = summarize_pairs(phases)
    assert s["pairs"] == 3 and s["iters_per_phase"] == 3
    assert s["c_ms_per_phase"] == [100.0, 110.0, 100.0] and s["b_ms_per_phase"] == [102.0, 121.0, 103.0]
    assert s["pct_per_pair"] == pytest.approx([2.0, 10.0, 3.0], abs=1e-3)
    assert s["pct_median"] == pytest.approx(3.0, abs=1e-3)  # not the mean (5.0), not the best pair (2.0)
    assert s["pct_min"] == pytest.approx(2.0, abs=1e-3) and s["pct_max"] == pytest.approx(10.0, abs=1e-3)
    assert s["c_ms_median"] == 100.0 and s["b_ms_median"] == 103.0
    assert math.isclose(s["pct_pooled"], 3.0, abs_tol=1e-3)
    assert s["b_wait_ms_max"] == 2.0


def test_even_number_of_pairs_takes_the_middle_two():
    phases = {"c": [[1.0], [1.0], [1.0], [1.0]], "b": [[1.01], [1.02], [1.04], [1.10]], "b_wait": []}
    assert summarize_pairs(phases)["pct_median"] == pytest.approx(3.0, abs=1e-3)


def _record(run, pct_pairs, cores=16):
    phases = {"c": [[0.1]] * len(pct_pairs), "b": [[0.1 * (1 + p / 100)] for p in pct_pairs], "b_wait": [[0.0]]}
    return {"stage": "paired", "run": run, "trainer": "T", "configuration": "3d_fullres", "cores": cores,
            "delivery": "cuda_ipc", "paired": summarize_pairs(phases)}


def test_table_and_figures():
    meta = {"date": "2026-12-02 07:00 UTC", "machine": "test machine", "command": "E2E_STAGES=paired x"}
    rows = [_record("patch", [2.0, 4.0, 2.5]), _record("cascade", [3.5, 3.4, 3.6]),
            {"stage": "paired", "run": "patch_da5", "trainer": "T", "configuration": "3d_fullres", "cores": 16,
             "skipped": "not enough time left (20 s)"},
            {"stage": "patch", "kind": "b"}]  # another stage's record: ignored
    table = render_paired(rows, meta)
    assert "test machine" in table and "E2E_STAGES=paired x" in table
    assert "**+2.50 %** [+2.00, +4.00]" in table and "≤ 3 %: not resolved (1 of 3 pairs above)" in table
    assert "**+3.50 %**" in table and "≤ 3 %: **missed** (every pair)" in table
    assert "not enough time left (20 s)" in table
    figs = {f["metric"]: f for f in paired_figures(rows, meta)}
    assert set(figs) == {"e2e_patch_pct_default_16c", "e2e_cascade_pct"}
    assert figs["e2e_patch_pct_default_16c"]["value"] == 2.5 and figs["e2e_patch_pct_default_16c"]["issue"] == 22
    assert figs["e2e_cascade_pct"]["issue"] == 24 and figs["e2e_cascade_pct"]["pct_per_pair"] == [3.5, 3.4, 3.6]
    assert "paired" in figs["e2e_cascade_pct"]["method"] and figs["e2e_cascade_pct"]["date"] == "2026-12-02"


def test_parse_runs_refuses_unknown_names():
    assert parse_runs("patch,cascade,") == ["patch", "cascade"]
    with pytest.raises(ValueError, match="unknown cascadee"):
        parse_runs("patch,cascadee")


def test_verdict_needs_every_pair():
    p = summarize_pairs({"c": [[1.0]] * 3, "b": [[1.01], [1.02], [1.029]], "b_wait": []})
    assert verdict(p, 3.0) == "≤ 3 %: met (every pair)"
    p = summarize_pairs({"c": [[1.0]] * 3, "b": [[1.01], [1.02], [1.031]], "b_wait": []})
    assert verdict(p, 3.0).startswith("≤ 3 %: not resolved (1 of 3")  # median 2 % but one pair above
    assert verdict(p, None) == "–"


def test_patch_runs_take_the_target_of_their_core_count():
    rows = [_record("patch", [4.0, 4.5, 4.2], cores=4), _record("patch", [4.0, 4.5, 4.2], cores=8)]
    table = render_paired(rows, {})
    assert "≤ 5 %: met (every pair)" in table  # issue 22: 5 % at 4 cores
    assert table.rstrip().splitlines()[-1].endswith("| – |")  # no target named for 8 cores


def test_incomplete_records_and_unpinned_runs():
    empty = summarize_pairs({"c": [], "b": [], "b_wait": []})
    assert empty["pct_median"] is None and empty["pct_pooled"] is None
    zero_c = summarize_pairs({"c": [[0.0]], "b": [[0.1]], "b_wait": []})  # no ZeroDivisionError
    assert zero_c["pct_pooled"] is None and zero_c["pairs"] == 0
    rows = [{"stage": "paired", "run": "patch", "trainer": "T", "configuration": "3d_fullres", "cores": 16,
             "paired": empty},
            _record("patch", [1.0, 2.0, 1.5], cores=None), _record("cascade", [1.0, 2.0, 1.5], cores=None)]
    assert "no complete pair" in render_paired(rows, {})
    assert [f["metric"] for f in paired_figures(rows, {})] == ["e2e_cascade_pct"]  # no "..._Nonec"


def test_stage_paired_builds_pinned_paired_runs(tmp_path, monkeypatch):
    """stage_paired: one --mode paired driver per run, pinned with taskset, patch runs with the crop-worker cap, the
    cascade on its configuration; records under stage "paired" (run_one faked: no training)."""
    import argparse
    import run_e2e

    calls = []
    monkeypatch.setattr(run_e2e, "run_one", lambda ctx, label, cmd, env=None, **f: calls.append((label, cmd, env, f)))
    monkeypatch.setattr(run_e2e, "pinned_cpus", lambda n: list(range(n)))
    monkeypatch.setattr(run_e2e.shutil, "which", lambda name: "/usr/bin/taskset")
    monkeypatch.setenv("AUGMENTD_ADDRESS", "unix:///elsewhere")  # the trainer must start its own server
    args = argparse.Namespace(work=str(tmp_path / "w"), out=str(tmp_path / "o"), paired_runs=["patch", "cascade"],
                              paired_cores=16, paired_pairs=4, paired_iters=15, paired_settle=3, device="cuda:0",
                              warmup=8, iters=50, run_seconds=7.0, delivery="cuda_ipc,auto", cpu_threads=0, profile=0)
    run_e2e.stage_paired(run_e2e.Ctx(args))
    assert [c[0] for c in calls] == ["paired-patch-16c", "paired-cascade-16c"]
    (_, cmd_p, env_p, f_p), (_, cmd_c, env_c, f_c) = calls
    assert cmd_p[:3] == ["/usr/bin/taskset", "-c", "0-15"] and f_p["cpus"] == "0-15"
    value = lambda cmd, flag: cmd[len(cmd) - 1 - cmd[::-1].index(flag) + 1]  # noqa: E731 (argparse: last wins)
    assert value(cmd_p, "--mode") == "paired" and value(cmd_p, "--pairs") == "4" and value(cmd_p, "--iters") == "15"
    assert value(cmd_p, "--settle") == "3" and value(cmd_p, "--n-proc-da") == "15"
    assert value(cmd_p, "--trainer") == "nnUNetTrainerAugmentdPatch" and env_p["AUGMENTD_PATCH_THREADS"] == "4"
    assert value(cmd_c, "--configuration") == "3d_cascade_fullres" and "AUGMENTD_PATCH_THREADS" not in env_c
    assert "AUGMENTD_ADDRESS" not in env_p and "AUGMENTD_ADDRESS" not in env_c
    assert f_p["stage"] == f_c["stage"] == "paired" and f_c["run"] == "cascade" and f_c["cores"] == 16
