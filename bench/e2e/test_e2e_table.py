"""Checks of the end-to-end tables' arithmetic (no GPU, no nnU-Net): ``pytest bench/e2e -q``."""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e_table import multi_row, render  # noqa: E402
from train_driver import summarize  # noqa: E402


def _session(label, iters, window, waits):
    s = summarize(waits, [0.1] * len(waits), 2, window)
    s.update(label=label, device="cuda:0", delivery="inline", wait_ms=[w * 1000 for w in waits],
             max_mem_reserved_mib=1000, gpu_util_mean=None, loss_finite=True)
    s["iters"] = iters
    s["samples_per_s"] = iters * 2 / window
    return s


def test_summarize():
    s = summarize([0.01, 0.03], [0.09, 0.07], batch_size=2, window_s=0.2)
    assert s["iters"] == 2 and s["samples_per_s"] == 20.0
    assert math.isclose(s["wait_fraction"], 0.2)
    assert s["ms_per_iter_median"] == 100.0 and s["wait_ms_mean"] == 20.0


def test_multi_row_fairness_and_p99():
    sessions = [_session("a", 10, 10.0, [0.001] * 98 + [0.5, 0.5]), _session("b", 12, 10.0, [0.002] * 100)]
    row = multi_row("multi-2-augmentd", 2, "augmentd", 1, sessions, {"gpu_mem_mib_max": {0: 5000.0}})
    assert math.isclose(row["aggregate_samples_per_s"], 4.4)
    assert math.isclose(row["fairness"], 1.2)
    assert row["wait_ms_p99_worst_session"] == 500.0
    table = render([row], {"dataset": {}})
    assert "| `multi-2-augmentd` | 2 / 1 | 4.40 |" in table and "gpu0: 5000" in table


def test_render_marks_missed_target():
    base = dict(stage="default", iters=5, wait_ms_median=0, wait_ms_p99=0, wait_fraction=0, step_ms_median=1,
                samples_per_s=1, delivery="x")
    rows = [dict(base, label="c", kind="c", ms_per_iter_median=100.0, ms_per_iter_mean=100.0),
            dict(base, label="b", kind="b", ms_per_iter_median=110.0, ms_per_iter_mean=120.0)]
    assert "+10.0 % → MISSED (mean: +20.0 %)" in render(rows, {"dataset": {}})
    rows[1]["ms_per_iter_median"] = 102.0
    table = render(rows, {"dataset": {}})
    assert "+2.0 % → met (mean: +20.0 %)" in table
    assert "| 102.0 / 120.0 | +2.0 % / +20.0 % |" in table
    del rows[1]["ms_per_iter_mean"]  # older result files have no mean
    assert "+2.0 % → met (mean: –)" in render(rows, {"dataset": {}})


def test_parse_smi():
    import time

    from run_e2e import parse_smi

    t = time.mktime(time.strptime("2026/11/29 20:15:33", "%Y/%m/%d %H:%M:%S"))
    text = ("2026/11/29 20:15:32.900, 0, 5, 1000\n2026/11/29 20:15:33.250, 0, 90, 30000\n"
            "2026/11/29 20:15:33.500, 1, 70, 20000\n2026/11/29 20:15:34.750, 0, 10, 2000\nNot Supported\n")
    got = parse_smi(text, t, t + 1.0)
    assert got["gpu_mem_mib_max"] == {0: 30000.0, 1: 20000.0}
    assert got["gpu_util_smi_mean"] == {0: 90.0, 1: 70.0}


def test_cpu_window_measures_the_cores_a_process_uses():
    import os
    import time

    from run_e2e import CpuWindow, proc_cpu_seconds

    assert proc_cpu_seconds(2 ** 31) is None  # no such process
    t0 = time.time()
    window = CpuWindow(os.getpid(), t0 + 0.1, t0 + 0.6)
    end = t0 + 0.7
    x = 0
    c0, w0 = time.process_time(), time.time()
    while time.time() < end:  # this process keeps one core busy for the whole window (as far as it gets one)
        x += 1
    share = (time.process_time() - c0) / (time.time() - w0)  # the core share it really got, loaded machine or not
    cores = window.cores()
    assert cores is not None and 0 < cores <= 1.5, cores
    assert abs(cores - share) <= 0.1 + 0.3 * share, (cores, share)
