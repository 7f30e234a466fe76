"""``--repeats`` and ``--patch-variants`` (run_e2e.py): the aggregate over repeats (repeats.py), the order of the runs
and the skipping of whole repeats for time (with a fake run_one: no training), the variants' parsing and refusal,
train_driver's switch interval, and the tables' and figures' new cells. No GPU, no nnU-Net."""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run_e2e  # noqa: E402
from e2e_table import render  # noqa: E402
from patch_table import patch_figures, render_patch  # noqa: E402
from repeats import aggregate, runs_text  # noqa: E402


def _rec(kind, rep, median, stage="patch", **extra):
    r = dict(stage=stage, kind=kind, rep=rep, label=f"{stage}-{kind}-r{rep}", ms_per_iter_median=median,
             ms_per_iter_mean=median + 1.0, gpu_util_mean=90.0 + rep, samples_per_s=30.0 - rep, delivery="cuda_ipc",
             wait_ms_median=0.1, wait_ms_p99=0.5, wait_fraction=0.01, step_ms_median=median - 1.0, iters=50)
    r.update(extra)
    return r


# --- the aggregate -------------------------------------------------------------------------------------------------

def test_aggregate_is_the_median_over_repeats_odd_and_even():
    odd = aggregate([_rec("c", 2, 66.0), _rec("c", 0, 65.0), _rec("c", 1, 70.0)])  # any order: sorted by rep
    assert odd["ms_per_iter_median"] == 66.0 and odd["runs"] == [65.0, 70.0, 66.0] and odd["n"] == 3
    assert odd["ms_per_iter_mean"] == 67.0 and odd["gpu_util_mean"] == 91.0 and odd["reps"] == [0, 1, 2]
    even = aggregate([_rec("c", 0, 65.9), _rec("c", 1, 67.3)])
    assert even["ms_per_iter_median"] == pytest.approx(66.6) and even["runs"] == [65.9, 67.3] and even["n"] == 2
    # a failed or skipped repeat is counted, never replaced; nothing measured → None
    part = aggregate([_rec("c", 0, 65.0), dict(stage="patch", kind="c", rep=1, skipped="time")])
    assert part["n"] == 1 and part["n_planned"] == 2 and part["ms_per_iter_median"] == 65.0
    assert runs_text(part) == "median of 1: 65.0 ms (1 of 2 repeats not measured)"
    assert aggregate([dict(kind="c", error="exit 1")]) is None
    one = aggregate([_rec("c", 0, 65.0)])
    assert runs_text(one) == "" and one["ms_per_iter_median"] == 65.0  # one run: today's cells


def test_patch_figures_use_the_median_over_repeats_and_list_every_run():
    rows = [_rec("c", 0, 65.0, aug="default", cores=16), _rec("b", 0, 67.0, aug="default", cores=16),
            _rec("c", 1, 68.0, aug="default", cores=16), _rec("b", 1, 67.5, aug="default", cores=16),
            _rec("c", 2, 66.0, aug="default", cores=16), _rec("b", 2, 70.0, aug="default", cores=16),
            _rec("b-switch50", 0, 60.0, aug="default", cores=16)]  # a variant: no figure, not in b's aggregate
    (f,) = patch_figures(rows, {"date": "2026-12-02 06:00 UTC", "machine": "h200"})
    assert f["metric"] == "e2e_patch_pct_default_16c" and f["value"] == round(100 * (67.5 / 66.0 - 1), 2)
    assert f["runs_c"] == [65.0, 68.0, 66.0] and f["runs_b"] == [67.0, 67.5, 70.0]
    assert f["repeats"] == {"c": 3, "b": 3} and f["baseline"]["value"] == 66.0 and f["ms_per_iter_median"] == 67.5
    assert "median over repeats" in f["aggregate"] and "median over repeats" in f["baseline"]["what"]
    # even N: the mean of the two middle values
    (g,) = patch_figures(rows[:4], {})
    assert g["value"] == round(100 * (67.25 / 66.5 - 1), 2) and g["runs_b"] == [67.0, 67.5]
    assert json.loads(json.dumps(f)) == f


def test_configuration_figures_aggregate_repeats():
    rows = [_rec("c", 0, 100.0, stage="2d"), _rec("b", 0, 104.0, stage="2d"), _rec("c", 1, 102.0, stage="2d"),
            _rec("b", 1, 103.0, stage="2d"), _rec("b-host_shm", 0, 1.0, stage="2d")]
    (f,) = run_e2e.configuration_figures(rows, {"date": "2026-12-02 06:00 UTC"})
    assert f["metric"] == "e2e_2d_pct" and f["value"] == round(100 * (103.5 / 101.0 - 1), 2)
    assert f["runs_c"] == [100.0, 102.0] and f["runs_b"] == [104.0, 103.0] and f["repeats"] == {"c": 2, "b": 2}


# --- the tables ----------------------------------------------------------------------------------------------------

def test_patch_table_shows_the_aggregate_every_repeat_and_the_variant_columns():
    kw = dict(aug="default", cores=16)
    rows = [_rec("c", 0, 65.0, **kw), _rec("b", 0, 67.0, **kw), _rec("b-switch50", 0, 66.0, **kw),
            _rec("c", 1, 67.0, **kw), _rec("b", 1, 68.0, **kw), _rec("b-switch50", 1, 65.0, **kw)]
    table = render_patch(rows, {"dataset": {}})
    assert "Repeats: up to 2 per kind" in table and "median over repeats of the per-run ms/iter medians" in table
    assert "| cores (threads) | compute only (`nnUNetTrainer`) | `nnUNetTrainerAugmentdPatch` | " \
           "`nnUNetTrainerAugmentdPatch` switch50 | target |" in table and "|---|---|---|---|---|" in table
    assert "| 16 (15) | 66.0 / 67.0 ms, GPU busy 90 %" in table and "median of 2: 65.0, 67.0 ms |" in table
    assert "67.5 / 68.5 ms (+2.3 % / +2.2 %)" in table and "median of 2: 67.0, 68.0 ms |" in table
    assert "65.5 / 66.5 ms (-0.8 % / -0.7 %)" in table and "median of 2: 66.0, 65.0 ms |" in table
    assert "≤ 3 %: met" in table and "switch50 = `sys.setswitchinterval(0.05)`" in table
    failed = [dict(stage="patch", kind="b-ahead1", rep=r, error=f"exit {r + 1}", **kw) for r in (0, 1)]
    assert "| none of 2 repeats measured; the last: FAILED: exit 2 |" in render_patch(rows + failed, {"dataset": {}})
    one = render_patch([_rec("c", 0, 65.0, **kw), _rec("b", 0, 67.0, **kw)], {"dataset": {}})
    assert "Repeats" not in one and "median of" not in one and "Variant columns" not in one  # today's table


def test_configuration_table_reports_the_aggregate_and_each_repeat():
    rows = [_rec("c", 0, 65.9, stage="2d"), _rec("b", 0, 67.0, stage="2d"), _rec("c", 1, 67.3, stage="2d"),
            _rec("b", 1, 69.0, stage="2d")]
    table = render(rows, {"dataset": {}})
    assert "(c) 66.6 ms, median of 2: 65.9, 67.3 ms; (b) 68.0 ms, median of 2: 67.0, 69.0 ms." in table
    assert "the target below and the figure use the median over repeats of the per-run ms/iter medians" in table
    d = 100 * (68.0 / 66.6 - 1)
    assert f"Target (b) within 3 % of (c): {d:+.1f} % → met" in table
    assert table.count("`2d-c-r") == 2 and table.count("`2d-b-r") == 2  # every repeat has its row
    assert "| 65.9 / 66.9 | -1.1 % / -1.0 % |" in table  # each row against the aggregate compute only
    one = render(rows[:2], {"dataset": {}})
    assert "Repeats" not in one and "+1.7 % → met" in one


# --- the order of the runs and the time budget (fake run_one) --------------------------------------------------------

class _Clock:
    """time for run_e2e: a monotonic clock that only the fake runs advance; everything else is the real module."""

    def __init__(self):
        self.now = run_e2e.T0

    def monotonic(self):
        return self.now

    def __getattr__(self, name):
        return getattr(time, name)


@pytest.fixture
def fake(tmp_path, monkeypatch):
    clock, calls = _Clock(), []
    monkeypatch.setattr(run_e2e, "time", clock)

    def run_one(ctx, label, cmd, env=None, **fields):
        calls.append(dict(label=label, cmd=cmd, env=env, **fields))
        clock.now += 30.0  # each run takes 30 s
        ctx.record(dict(_rec(fields["kind"], fields["rep"], 60.0 + len(calls)), label=label, **fields))

    monkeypatch.setattr(run_e2e, "run_one", run_one)

    def make(**kw):
        args = dict(work=str(tmp_path / "work"), out=str(tmp_path / "out"), deadline=1000.0, min_run_seconds=10.0,
                    run_timeout=150.0, repeats=1, config_variants=[], patch_variants=[], patch_cores=[1],
                    patch_compute="each", device="cpu", warmup=1, iters=2, run_seconds=5.0, delivery="auto",
                    cpu_threads=1, profile=0)
        args.update(kw)
        ctx = run_e2e.Ctx(argparse.Namespace(**args))
        ctx.meta = {"dataset": {}}
        return ctx

    return make, calls, clock


def test_repeats_alternate_compute_and_augmentd(fake):
    make, calls, _ = fake
    ctx = make(repeats=3)
    run_e2e.stage_configuration(ctx, "2d")
    assert [(c["kind"], c["rep"]) for c in calls] == [("c", 0), ("b", 0), ("c", 1), ("b", 1), ("c", 2), ("b", 2)]
    assert [c["label"] for c in calls[:2]] == ["2d-compute-r0", "2d-augmentd-r0"]
    assert "--json" in calls[3]["cmd"] and calls[3]["cmd"][calls[3]["cmd"].index("--label") + 1] == "2d-augmentd-r1"
    assert [r["rep"] for r in ctx.results] == [0, 0, 1, 1, 2, 2]
    figures = [json.loads(x) for x in (ctx.out / "figures-configurations.jsonl").read_text().splitlines()]
    assert figures[0]["runs_c"] == [61.0, 63.0, 65.0] and figures[0]["runs_b"] == [62.0, 64.0, 66.0]


def test_one_repeat_is_todays_run(fake):
    make, calls, _ = fake
    ctx = make(repeats=1, deadline=1.0)  # no time: run_one itself decides, as before (no whole-repeat check)
    run_e2e.stage_configuration(ctx, "cascade")
    assert [(c["label"], c["kind"], c["rep"]) for c in calls] == [("cascade-compute", "c", 0),
                                                                  ("cascade-augmentd", "b", 0)]


def test_budget_skips_whole_later_repeats(fake):
    make, calls, _ = fake
    # 100 s: repeat 0 needs 2 × 10 (--min-run-seconds) + 5 s and takes 60; then 40 s are left and a repeat needs
    # 2 × 30 (the longest run so far) + 5 s: repeats 1 and 2 are skipped whole, never a compute only alone.
    ctx = make(repeats=3, deadline=100.0)
    run_e2e.stage_configuration(ctx, "2d")
    assert [(c["kind"], c["rep"]) for c in calls] == [("c", 0), ("b", 0)]
    skipped = [r for r in ctx.results if "skipped" in r]
    assert [(r["kind"], r["rep"], r["label"]) for r in skipped] == [
        ("c", 1, "2d-compute-r1"), ("b", 1, "2d-augmentd-r1"), ("c", 2, "2d-compute-r2"), ("b", 2, "2d-augmentd-r2")]
    assert all("repeat 2 of 3" in r["skipped"] for r in skipped)
    table = (ctx.out / "table.md").read_text()
    assert "median of 1: 61.0 ms (2 of 3 repeats not measured)" in table
    (f,) = [json.loads(x) for x in (ctx.out / "figures-configurations.jsonl").read_text().splitlines()]
    assert f["repeats"] == {"c": 1, "b": 1} and f["runs_c"] == [61.0]


def test_budget_counts_the_variants_of_a_repeat(fake):
    make, calls, _ = fake
    if shutil.which("taskset") is None:
        pytest.skip("taskset (util-linux) not on PATH")
    # a patch repeat with one variant is 3 runs: 3 × 10 + 5 = 35 s needed before the first, 3 × 30 + 5 after it
    ctx = make(repeats=2, deadline=150.0, patch_variants=["threads2"])
    run_e2e.stage_patch(ctx, "default")
    assert [(c["kind"], c["rep"]) for c in calls] == [("c", 0), ("b", 0), ("b-threads2", 0)]
    assert [r["kind"] for r in ctx.results if "skipped" in r] == ["c", "b", "b-threads2"]


def test_patch_variants_run_after_each_patch_run_with_their_environment(fake):
    make, calls, _ = fake
    if shutil.which("taskset") is None:
        pytest.skip("taskset (util-linux) not on PATH")
    ctx = make(repeats=2, patch_variants=["switch50", "threads2", "ahead1"])
    run_e2e.stage_patch(ctx, "da5")
    kinds = ["c", "b", "b-switch50", "b-threads2", "b-ahead1"]
    assert [(c["kind"], c["rep"]) for c in calls] == [(k, r) for r in (0, 1) for k in kinds]
    by = {(c["kind"], c["rep"]): c for c in calls}
    assert by[("b-switch50", 1)]["label"] == "patch1-da5-augmentd-patch-switch50-r1"
    assert by[("b-switch50", 0)]["env"]["E2E_SWITCH_INTERVAL"] == "0.05"
    assert by[("b-threads2", 0)]["env"]["AUGMENTD_PATCH_THREADS"] == "2"
    assert by[("b-ahead1", 0)]["env"]["AUGMENTD_PATCH_AHEAD"] == "1"
    assert "E2E_SWITCH_INTERVAL" not in by[("b", 0)]["env"] and "AUGMENTD_PATCH_AHEAD" not in by[("c", 1)]["env"]
    assert by[("b", 0)]["env"]["AUGMENTD_PATCH_THREADS"] == "1"  # N = 1: one worker, as before
    assert all(c["cmd"][0].endswith("taskset") and c["cores"] == 1 and c["aug"] == "da5" for c in calls)
    assert by[("b-ahead1", 1)]["cmd"][by[("b-ahead1", 1)]["cmd"].index("--trainer") + 1] == \
        "nnUNetTrainerAugmentdPatchDA5"
    assert [f["metric"] for f in patch_figures(ctx.results, {})] == ["e2e_patch_pct_da5_1c"]  # no variant figure
    table = (ctx.out / "table.md").read_text()
    assert "`nnUNetTrainerAugmentdPatchDA5` ahead1 |" in table and "`nnUNetTrainerAugmentdPatchDA5` threads2 |" in table


# --- option parsing ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["--patch-variants", "switch50,bogus"], "unknown or repeated variant (bogus); known: switch50, threads2, ahead1"),
    (["--patch-variants", "switch50,switch50"], "unknown or repeated variant (repeated)"),
    (["--repeats", "0"], "--repeats 0: at least 1"),
])
def test_bad_options_are_refused_at_start(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.setenv("AUGMENTD_BIN", "/nonexistent")
    with pytest.raises(SystemExit) as err:
        run_e2e.main(["--work", str(tmp_path), "--out", str(tmp_path / "out"), "--stages", "patch"] + argv)
    assert err.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "out" / "results.jsonl").exists()  # nothing ran


def test_variants_and_repeats_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("AUGMENTD_BIN", "/nonexistent")
    monkeypatch.setenv("E2E_PATCH_VARIANTS", "switch50,threads2,ahead1")
    monkeypatch.setenv("E2E_REPEATS", "3")
    seen = {}
    monkeypatch.setattr(run_e2e, "stage_patch", lambda ctx, da: seen.update(
        da=da, repeats=ctx.args.repeats, variants=ctx.args.patch_variants))
    assert run_e2e.main(["--work", str(tmp_path), "--out", str(tmp_path / "out"), "--stages", "patch_da5",
                         "--quiet"]) == 0
    assert seen == {"da": "da5", "repeats": 3, "variants": ["switch50", "threads2", "ahead1"]}


def test_driver_sets_the_switch_interval_before_the_trainer(monkeypatch):
    pytest.importorskip("torch")
    import train_driver

    seen = []

    class Stop(Exception):
        pass

    def make_trainer(args, device):
        seen.append(sys.getswitchinterval())
        raise Stop

    monkeypatch.setattr(train_driver, "setup_env", lambda args: None)
    monkeypatch.setattr(train_driver, "make_trainer", make_trainer)
    before = sys.getswitchinterval()
    try:
        monkeypatch.setenv("E2E_SWITCH_INTERVAL", "0.05")
        with pytest.raises(Stop):
            train_driver.main(["--work", "/nonexistent", "--device", "cpu"])
        monkeypatch.delenv("E2E_SWITCH_INTERVAL")
        sys.setswitchinterval(before)
        with pytest.raises(Stop):
            train_driver.main(["--work", "/nonexistent", "--device", "cpu"])
        with pytest.raises(Stop):
            train_driver.main(["--work", "/nonexistent", "--device", "cpu", "--switch-interval", "0.02"])
    finally:
        sys.setswitchinterval(before)
    assert seen == pytest.approx([0.05, before, 0.02])
