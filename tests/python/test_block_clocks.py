"""bench/block_clocks.py (issue 27, s47): the timeline table of cuda_pipeline_bench --block-clocks (a synthetic CSV in
the bench's format; no GPU needed)."""
import importlib.util
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "block_clocks.py"
HEADER = ("config,batch,set,batch_ms,sms,kernel,block,smid,entry_ns,waited_ns,triggered_ns,exit_ns,waited_cyc,"
          "triggered_cyc,exit_cyc\n")


def line(batch, kernel, block, smid, entry, waited, exit_, cfg="all-on:2:1:128x128x128", sms=2):
    w = "" if waited is None else str(waited)
    wc = "" if waited is None else str((waited - entry) * 2)
    return f"{cfg},{batch},0,0.0300,{sms},{kernel},{block},{smid},{entry},{w},,{exit_},{wc},,{(exit_ - entry) * 2}\n"


def load_module():
    spec = importlib.util.spec_from_file_location("block_clocks", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def table_cells(out):
    return [len(l.strip().strip("|").split("|")) for l in out.splitlines() if l.startswith("|")]


def rows_of(out):
    return {cells[0]: cells for cells in
            ([c.strip() for c in l.strip("|").split("|")] for l in out.splitlines() if l.startswith("| ")
             and not l.startswith("| kernel"))}


def test_two_kernels_on_two_sms(tmp_path):
    # spatial: two blocks on SMs 0 and 1, 0-10 µs and 0-6 µs (no wait). blur: ten blocks that wait until 12 µs,
    # nine leave at 20 µs and one at 30 µs, all on SM 0; nine entered at 8 µs, the last at 11 µs.
    text = HEADER + line(0, "spatial", 0, 0, 0, None, 10_000) + line(0, "spatial", 1, 1, 0, None, 6_000)
    for b in range(10):
        text += line(0, "blur", b, 0, 11_000 if b == 9 else 8_000, 12_000, 30_000 if b == 9 else 20_000)
    f = tmp_path / "clocks.csv"
    f.write_text(text)
    r = run(f)
    assert r.returncode == 0, r.stderr
    rows = rows_of(r.stdout)
    assert table_cells(r.stdout) == [14] * 4  # header, separator, two kernels: every row as wide as the header
    assert list(rows) == ["spatial", "blur"]
    assert rows["spatial"][1:3] == ["2", "2"]
    # busy: SM 0 holds a block all of 0-10, SM 1 for 0-6: mean 80 %.
    assert rows["spatial"][10] == "80%"
    assert rows["spatial"][7] == "–"  # no kernel before it
    assert rows["blur"][1:3] == ["10", "1"]
    assert rows["blur"][10] == "50%"  # SM 1 of the device's two held none of its blocks
    assert rows["blur"][3] == "8.0 … 11.0"
    assert rows["blur"][4] == "12.0 … 12.0"
    assert rows["blur"][5] == "20.0 / 20.0 / 30.0"
    # the wait returned 2 µs after the spatial kernel's last block left; nine of the ten blocks had entered before
    # it left (the tenth at 11 µs); the last tenth took 10 µs more.
    assert rows["blur"][6] == "2.0"
    assert rows["blur"][7] == "90%"
    assert rows["blur"][8] == "90%"  # all on SM 0, whose spatial block left at 10 µs: the same nine shared it
    assert rows["blur"][9] == "10.0"
    assert rows["blur"][11] == "8.00"  # median block time from the wait's return
    # the critical path: the spatial kernel's last block left at 10 µs, the blur's 20 µs later; they sum to 30.
    assert rows["spatial"][13] == "10.0"
    assert rows["blur"][13] == "20.0"
    assert "first entry to last exit median 30.0 µs" in r.stdout


def test_median_over_batches_and_one_batch(tmp_path):
    text = HEADER
    for batch, end in ((0, 10_000), (1, 20_000), (2, 40_000)):
        text += line(batch, "final", 0, 3, 0, 1_000, end)
    f = tmp_path / "clocks.csv"
    f.write_text(text)
    assert rows_of(run(f).stdout)["final"][5] == "20.0 / 20.0 / 20.0"
    assert rows_of(run(f, "--batch", 2).stdout)["final"][5] == "40.0 / 40.0 / 40.0"


def test_no_rows_for_the_filter_fails(tmp_path):
    f = tmp_path / "clocks.csv"
    f.write_text(HEADER + line(0, "mid", 0, 0, 0, 1, 2))
    r = run(f, "--config", "default-p")
    assert r.returncode == 1
    assert "no recorded blocks" in r.stderr


def test_launch_order_first_kernel_and_the_early_boundary(tmp_path):
    # Batch 0 has no mid pass: gamma0 comes first, entering at 2 µs and leaving at 10 µs; of final's two blocks one
    # entered at 9 µs, the other exactly as gamma0's last block left (not early). Batch 1 has mid first.
    text = HEADER + line(0, "gamma0", 0, 0, 2_000, 2_000, 10_000)
    text += line(0, "final", 0, 1, 9_000, 11_000, 15_000) + line(0, "final", 1, 0, 10_000, 11_000, 15_000)
    text += line(1, "mid", 0, 0, 0, None, 4_000) + line(1, "gamma0", 0, 1, 1_000, 5_000, 10_000)
    text += line(1, "final", 0, 0, 10_000, 11_000, 15_000)
    f = tmp_path / "clocks.csv"
    f.write_text(text)
    assert list(rows_of(run(f).stdout)) == ["mid", "gamma0", "final"]  # launch order, not the names' order
    rows = rows_of(run(f, "--batch", 0).stdout)
    assert list(rows) == ["gamma0", "final"]
    assert rows["gamma0"][13] == "10.0"  # from the batch's first entry, not from its own (2 µs)
    assert rows["gamma0"][7] == "–"
    assert rows["gamma0"][8] == "–"
    assert rows["final"][7] == "50%"  # entering as the previous kernel's last block leaves is not early
    # beside: the block that entered early did so on SM 1, which held no gamma0 block; the other entered SM 0 as
    # gamma0's block there left. Neither shared a multiprocessor with the kernel before.
    assert rows["final"][8] == "0%"
    assert rows["final"][13] == "5.0"
    rows = rows_of(run(f, "--batch", 1).stdout)
    assert [rows[k][13] for k in ("mid", "gamma0", "final")] == ["4.0", "6.0", "5.0"]
    # final's block entered SM 0 at 10 µs: mid's block there had left at 4, gamma0 (on SM 1) is the kernel before.
    assert rows["final"][8] == "0%"


def test_beside_compares_with_the_previous_kernel_on_the_same_multiprocessor(tmp_path):
    # mid on SMs 0 and 1 (leaving at 4 and 2 µs); gamma0 on SM 1 until 10 µs; final's block enters SM 1 at 9 µs:
    # beside gamma0 (the kernel before it), though mid has long left both multiprocessors.
    text = HEADER + line(0, "mid", 0, 0, 0, None, 4_000) + line(0, "mid", 1, 1, 0, None, 2_000)
    text += line(0, "gamma0", 0, 1, 1_000, 5_000, 10_000) + line(0, "final", 0, 1, 9_000, 11_000, 15_000)
    f = tmp_path / "clocks.csv"
    f.write_text(text)
    rows = rows_of(run(f).stdout)
    assert rows["gamma0"][8] == "100%"  # entered SM 1 at 1 µs, before mid's block there left at 2
    assert rows["final"][8] == "100%"


def test_beside_share_takes_each_multiprocessors_last_exit():
    # SM 0 holds two blocks of the kernel before (leaving at 10 and 3 µs), SM 1 one (6 µs), SM 2 none.
    prev = [{"smid": 0, "exit": 10.0}, {"smid": 0, "exit": 3.0}, {"smid": 1, "exit": 6.0}]
    blocks = [{"smid": 0, "entry": 8.0}, {"smid": 1, "entry": 8.0}, {"smid": 2, "entry": 1.0},
              {"smid": 1, "entry": 5.0}]
    # beside: SM 0 at 8 (< 10) and SM 1 at 5 (< 6); not SM 1 at 8, nor SM 2, which held none.
    assert load_module().beside_share(prev, blocks) == 0.5


def test_a_missing_or_foreign_file_fails_in_one_line(tmp_path):
    r = run(tmp_path / "absent.csv")
    assert r.returncode == 1 and "cannot read" in r.stderr and "Traceback" not in r.stderr
    f = tmp_path / "other.csv"
    f.write_text("a,b\n1,2\n")
    r = run(f)
    assert r.returncode == 1 and "not a --block-clocks CSV" in r.stderr and "Traceback" not in r.stderr
