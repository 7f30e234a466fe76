"""bench/ab_table.py (issue 27): the A/B table of scripts/gpu-kernels-check.sh's JSON lines (synthetic files in the
formats bench/cuda_pipeline_bench and bench/cuda_chain_bench write; no GPU needed)."""
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "ab_table.py"


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def pipe_rows(all_on_eager, all_on_graph, fraction):
    return [
        {"impl": "device", "name": "NVIDIA H200", "copy_gbps": 4200.0, "bgv2": "0.3.5"},
        {"impl": "augmentd-spatial-bw", "mode": "spatial-bw", "B": 2, "C": 1, "shape": "128x128x128<-205x205x205",
         "spatial_ms": 0.12, "copy_ms": 0.015, "bytes": 1.0, "spatial_bandwidth_fraction": fraction},
        {"impl": "augmentd", "mode": "all-on", "B": 2, "C": 1, "shape": "128x128x128<-205x205x205",
         "ms_eager": all_on_eager, "ms_graph": all_on_graph, "bytes": 1.0, "mem_mb": 1.0, "ws_mb": 1.0},
    ]


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def test_best_of_eager_and_graph_per_round_and_best_round_against_the_first_side(tmp_path):
    write(tmp_path / "pipe-old-1.jsonl", pipe_rows(0.2600, 0.2500, 0.120))
    write(tmp_path / "pipe-new-1.jsonl", pipe_rows(0.2400, 0.2450, 0.125))
    write(tmp_path / "pipe-old-2.jsonl", pipe_rows(0.2550, 0.2560, 0.121))
    write(tmp_path / "pipe-new-2.jsonl", pipe_rows(0.2380, 0.2390, 0.126))
    for side, median in (("old", 0.236), ("new", 0.230)):
        write(tmp_path / f"chain-{side}-1.jsonl",
              [{"row": "da5 all on", "B": 2, "C": 1, "median_ms": 1.0, "p90_ms": 2.0, "marginal_ms": 0.0},
               {"row": "da5", "B": 2, "C": 1, "median_ms": median, "p90_ms": 0.4, "marginal_ms": 0.0}])
    r = run(tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    all_on = next(line for line in lines if line.startswith("| all-on B=2 C=1 128x128x128 |"))
    # Cells: min(eager, graph) of each round; last column: best new (0.2380) against best old (0.2500).
    assert "| 0.2500 / 0.2550 | 0.2400 / 0.2380 |" in all_on
    assert all_on.endswith("| new -4.8 % |")
    fraction = next(line for line in lines if line.startswith("| spatial-bw fraction"))
    assert fraction.endswith("| new +4.1 % |")  # higher is better: the best round is the largest (0.126 / 0.121)
    da5 = next(line for line in lines if line.startswith("| da5 chain B=2 C=1"))
    assert "0.2360 (0.400)" in da5 and da5.endswith("| new -2.5 % |")
    assert not any("da5 all on" in line for line in lines)  # only the da5 row


def test_side_order_is_old_new_then_by_name_or_as_asked(tmp_path):
    for side in ("zz", "bf", "new", "old"):  # written in this order: the order must not depend on it
        write(tmp_path / f"pipe-{side}-1.jsonl", pipe_rows(0.25, 0.25, 0.12))
    r = run(tmp_path)
    assert r.returncode == 0, r.stderr
    assert "| configuration | old | new | bf | zz |" in r.stdout
    r = run("--sides", "bf,old", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "| configuration | bf | old | best vs best (bf = 0) |" in r.stdout


def test_errors_name_the_problem(tmp_path):
    missing = run(tmp_path / "nowhere")
    assert missing.returncode == 2 and "not a directory" in missing.stderr
    empty = run(tmp_path)
    assert empty.returncode == 1 and "no pipe-SIDE-ROUND.jsonl" in empty.stderr
    write(tmp_path / "pipe-x-a.jsonl", pipe_rows(0.25, 0.25, 0.12))
    bad = run(tmp_path)
    assert bad.returncode == 2 and "pipe-x-a.jsonl: not PREFIX-SIDE-ROUND.jsonl" in bad.stderr


def test_per_set_table_shows_which_parameter_sets_moved(tmp_path):
    def rows(sets_eager, sets_graph):
        r = pipe_rows(0.25, 0.25, 0.12)
        r[2].update({"mode": "default-p", "sets_ms_eager": sets_eager, "sets_ms_graph": sets_graph,
                     "set_stages": [0, 1072]})
        return r
    write(tmp_path / "pipe-old-1.jsonl", rows([0.100, 0.110], [0.101, 0.109]))
    write(tmp_path / "pipe-old-2.jsonl", rows([0.099, 0.112], [0.102, 0.111]))
    write(tmp_path / "pipe-new-1.jsonl", rows([0.100, 0.120], [0.100, 0.121]))
    r = run("--sets", "default-p B=2 C=1 128x128x128", tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "| default-p B=2 C=1 128x128x128: set | stages | old | new | vs old |" in lines
    # Per set: the best of eager, graph and rounds; set 1's stage mask 0x430; only set 1 moved.
    assert "| 0 | 0x000 | 0.0990 | 0.1000 | new +1.0 % |" in lines
    assert "| 1 | 0x430 | 0.1090 | 0.1200 | new +10.1 % |" in lines
    missing = run("--sets", "all-on B=8 C=1 128x128x128", tmp_path)
    assert missing.returncode == 1 and "no per-set times of 'all-on B=8 C=1 128x128x128'" in missing.stderr


def test_rows_with_sets_have_a_mean_of_the_sets_row(tmp_path):
    # The median row and the mean of the sets can move in opposite directions (session 42): both are printed.
    def rows(ms, sets):
        r = pipe_rows(ms, ms, 0.12)
        r[2].update({"mode": "default-p", "sets_ms_eager": sets, "sets_ms_graph": [s + 0.001 for s in sets],
                     "set_stages": [0, 0, 0]})
        return r
    write(tmp_path / "pipe-old-1.jsonl", rows(0.100, [0.100, 0.110, 0.150]))
    write(tmp_path / "pipe-old-2.jsonl", rows(0.101, [0.101, 0.111, 0.152]))
    write(tmp_path / "pipe-new-1.jsonl", rows(0.104, [0.104, 0.105, 0.120]))
    r = run(tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "| default-p B=2 C=1 128x128x128 | 0.1000 / 0.1010 | 0.1040 | new +4.0 % |" in lines
    # Means: old 0.1200 / 0.1213, new 0.1097: the mean moved the other way.
    assert "| default-p B=2 C=1 128x128x128, mean of the sets | 0.1200 / 0.1213 | 0.1097 | new -8.6 % |" in lines


def test_digest_table_says_which_sides_computed_the_same_bits(tmp_path):
    def rows(digest):
        r = pipe_rows(0.25, 0.25, 0.12)
        r[2]["digest"] = digest
        return r
    for rnd in (1, 2):
        write(tmp_path / f"pipe-old-{rnd}.jsonl", rows("00000000000000aa"))
        write(tmp_path / f"pipe-new-{rnd}.jsonl", rows("00000000000000aa"))
        write(tmp_path / f"pipe-bf-{rnd}.jsonl", rows("00000000000000bb"))
    write(tmp_path / "pipe-zz-1.jsonl", rows("00000000000000aa"))
    write(tmp_path / "pipe-zz-2.jsonl", rows("00000000000000cc"))  # not deterministic between rounds
    r = run(tmp_path)
    assert r.returncode == 0, r.stderr  # a difference is a finding, not an error of the script
    row = next(line for line in r.stdout.splitlines() if line.startswith("| all-on B=2 C=1 128x128x128 | 0000"))
    assert row == "| all-on B=2 C=1 128x128x128 | 00000000000000aa | same | DIFFERENT | rounds disagree |"
    assert "| outputs (digests; reference: old) |" in r.stdout
    assert "some outputs differ" in r.stderr
    (tmp_path / "pipe-bf-1.jsonl").unlink()
    (tmp_path / "pipe-bf-2.jsonl").unlink()
    (tmp_path / "pipe-zz-1.jsonl").unlink()
    (tmp_path / "pipe-zz-2.jsonl").unlink()
    same = run(tmp_path)
    assert same.returncode == 0 and "some outputs differ" not in same.stderr
    assert "| all-on B=2 C=1 128x128x128 | 00000000000000aa | same |" in same.stdout


def test_rows_without_digests_print_no_digest_table(tmp_path):
    write(tmp_path / "pipe-old-1.jsonl", pipe_rows(0.25, 0.25, 0.12))
    write(tmp_path / "pipe-new-1.jsonl", pipe_rows(0.24, 0.24, 0.12))
    r = run(tmp_path)
    assert r.returncode == 0, r.stderr
    assert "(digests;" not in r.stdout


def test_seg_sides_are_compared_with_the_first_seg_side(tmp_path):
    """SEG_ARGS rows (`<side>_seg`) hash other inputs: they are compared among themselves, not with `old`."""
    def rows(digest):
        r = pipe_rows(0.25, 0.25, 0.12)
        r[2]["digest"] = digest
        return r
    for side, digest in (("old", "aa"), ("new", "aa"), ("old_seg", "bb"), ("new_seg", "bb")):
        write(tmp_path / f"pipe-{side}-1.jsonl", rows(digest * 8))
    r = run("--sides", "old,new,old_seg,new_seg", tmp_path)
    assert r.returncode == 0 and "some outputs differ" not in r.stderr, r.stderr
    assert "| all-on B=2 C=1 128x128x128 | aaaaaaaaaaaaaaaa | same | bbbbbbbbbbbbbbbb | same |" in r.stdout
    assert "reference: old and old_seg" in r.stdout
    write(tmp_path / "pipe-new_seg-1.jsonl", rows("cc" * 8))
    write(tmp_path / "pipe-old-2.jsonl", rows("dd" * 8))  # the reference itself is not deterministic
    r = run("--sides", "old,new,old_seg,new_seg", tmp_path)
    assert "| all-on B=2 C=1 128x128x128 | rounds disagree | no reference | bbbbbbbbbbbbbbbb | DIFFERENT |" in r.stdout
    assert "some outputs differ" in r.stderr
