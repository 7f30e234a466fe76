#!/usr/bin/env python3
"""The A/B table of one scripts/gpu-kernels-check.sh run: every configuration, every side, every round.

  python3 bench/ab_table.py OUT_DIR [OUT_DIR ...]

Reads OUT_DIR/pipe-SIDE-ROUND.jsonl (bench/cuda_pipeline_bench --json) and OUT_DIR/chain-SIDE-ROUND.jsonl
(bench/cuda_chain_bench --json). A pipeline cell is the better of eager launches and CUDA-graph replay (ms); the
last column compares the best round of each side with the best round of the first side. Chain rows: the median
(and p90) of the da5 row (nnU-Net's DA5 trainer). Sides keep the order of their first appearance (SIDES).
"""
import collections
import glob
import json
import os
import re
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def collect(out_dir, prefix):
    """{config: {side: {round: value}}} and the sides in order."""
    cells = collections.defaultdict(lambda: collections.defaultdict(dict))
    sides = []
    paths = glob.glob(os.path.join(out_dir, prefix + "-*-*.jsonl"))
    for path in sorted(paths, key=lambda p: (int(re.search(r"-(\d+)\.jsonl$", p).group(1)), os.path.getmtime(p))):
        m = re.match(prefix + r"-(.+)-(\d+)\.jsonl$", os.path.basename(path))
        side, rnd = m.group(1), int(m.group(2))
        if side not in sides:
            sides.append(side)
        for r in load(path):
            if prefix == "pipe" and r.get("impl") == "augmentd":
                key = f"{r['mode']} B={r['B']} C={r['C']} {r['shape'].split('<')[0]}"
                cells[key][side][rnd] = (min(r["ms_eager"], r["ms_graph"]),)
            elif prefix == "pipe" and r.get("impl") == "augmentd-spatial-bw":
                cells["spatial-bw fraction (higher is better)"][side][rnd] = (r["spatial_bandwidth_fraction"],)
                cells["spatial-bw kernel ms"][side][rnd] = (r["spatial_ms"],)
            elif prefix == "chain" and r.get("row") == "da5":
                cells[f"da5 chain B={r['B']} C={r['C']} median (p90)"][side][rnd] = (r["median_ms"], r["p90_ms"])
    return cells, sides


def table(cells, sides):
    if not cells:
        return
    print()
    print("| configuration | " + " | ".join(sides) + " | best vs best (" + sides[0] + " = 0) |")
    print("|---|" + "---|" * len(sides) + "---|")
    for key in cells:
        row, best = [], {}
        higher = "higher is better" in key
        for side in sides:
            rounds = cells[key].get(side, {})
            vals = [rounds[r] for r in sorted(rounds)]
            row.append(" / ".join(f"{v[0]:.4f}" + (f" ({v[1]:.3f})" if len(v) > 1 else "") for v in vals) or "—")
            if vals:
                best[side] = (max if higher else min)(v[0] for v in vals)
        base = best.get(sides[0])
        rel = ", ".join(f"{s} {100.0 * (best[s] / base - 1.0):+.1f} %" for s in sides[1:] if s in best and base)
        print(f"| {key} | " + " | ".join(row) + f" | {rel} |")


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) >= 2 else 2
    for out_dir in sys.argv[1:]:
        if not os.path.isdir(out_dir):
            print(f"ab_table.py: {out_dir}: not a directory", file=sys.stderr)
            return 2
        print(f"## {out_dir}")
        for prefix in ("pipe", "chain"):
            table(*collect(out_dir, prefix))
    return 0


if __name__ == "__main__":
    sys.exit(main())
