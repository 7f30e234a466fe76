#!/usr/bin/env python3
"""The A/B table of one scripts/gpu-kernels-check.sh run: every configuration, every side, every round.

  python3 bench/ab_table.py [--sides old,new,...] [--sets CONFIG] OUT_DIR [OUT_DIR ...]

Reads OUT_DIR/pipe-SIDE-ROUND.jsonl (bench/cuda_pipeline_bench --json) and OUT_DIR/chain-SIDE-ROUND.jsonl
(bench/cuda_chain_bench --json). A pipeline cell is the better of eager launches and CUDA-graph replay (ms); the
last column compares the best round of each side with the best round of the first side. A row with per-set times
(cuda_pipeline_bench's 16 parameter sets) is followed by "CONFIG, mean of the sets": per round, the mean over the sets
of each set's better of eager and graph. The row itself is the median over all batches, so one set's time, while a
training run that draws every set pays the mean (session 42: a change can move the two apart). Chain rows: the median
(and p90) of the da5 row (nnU-Net's DA5 trainer). Side order: --sides, else old, new, then the others by name.
--sets CONFIG (a configuration as the table names it, e.g. "default-p B=2 C=1 128x128x128") adds that
configuration's parameter sets, one row each with its stage mask: a mode's median is one set's cost, so this shows
which sets a change moved.
Rows with output digests (cuda_pipeline_bench --digests 1) add a digest table: per configuration, whether each side's
outputs are the same bits as the first side's of the same inputs (sides `X_seg`, the SEG_ARGS rows, against the first
`_seg` side), and whether a side's rounds agree with each other (a deterministic kernel's do). A kernel change meant
to keep every bit must show "same" on every row.
"""
import argparse
import collections
import glob
import json
import os
import re
import sys

NAME = re.compile(r"(pipe|chain)-(.+)-(\d+)\.jsonl$")
MEAN_OF_SETS = ", mean of the sets"


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def side_order(found, wanted):
    """The sides to print: `wanted` (those present), else old, new, then the others by name."""
    if wanted:
        return [s for s in wanted if s in found]
    return sorted(found, key=lambda s: ({"old": 0, "new": 1}.get(s, 2), s))


def rows(out_dir, prefix):
    """(side, round, row) of every OUT_DIR/PREFIX-SIDE-ROUND.jsonl; a file with any other name is an error."""
    for path in sorted(glob.glob(os.path.join(out_dir, prefix + "-*.jsonl"))):
        m = NAME.match(os.path.basename(path))
        if not m:
            raise ValueError(f"{path}: not PREFIX-SIDE-ROUND.jsonl")
        yield from ((m.group(2), int(m.group(3)), r) for r in load(path))


def collect(out_dir, prefix, wanted):
    """{config: {side: {round: value}}} and the sides in order."""
    cells = collections.defaultdict(lambda: collections.defaultdict(dict))
    found = set()
    for side, rnd, r in rows(out_dir, prefix):
        found.add(side)
        if prefix == "pipe" and r.get("impl") == "augmentd":
            cells[config_key(r)][side][rnd] = (min(r["ms_eager"], r["ms_graph"]),)
            if r.get("sets_ms_eager"):  # what a run drawing every set pays; the row above is one set's median
                per_set = [min(e, g) for e, g in zip(r["sets_ms_eager"], r["sets_ms_graph"])]
                cells[config_key(r) + MEAN_OF_SETS][side][rnd] = (sum(per_set) / len(per_set),)
        elif prefix == "pipe" and r.get("impl") == "augmentd-spatial-bw":
            cells["spatial-bw fraction (higher is better)"][side][rnd] = (r["spatial_bandwidth_fraction"],)
            cells["spatial-bw kernel ms"][side][rnd] = (r["spatial_ms"],)
        elif prefix == "chain" and r.get("row") == "da5":
            cells[f"da5 chain B={r['B']} C={r['C']} median (p90)"][side][rnd] = (r["median_ms"], r["p90_ms"])
    return cells, side_order(found, wanted)


def config_key(r):
    return f"{r['mode']} B={r['B']} C={r['C']} {r['shape'].split('<')[0]}"


def collect_sets(out_dir, config, wanted):
    """{set: {side: best over rounds}}, {set: stage mask} and the sides in order, for one configuration."""
    best, stages, found = collections.defaultdict(dict), {}, set()
    for side, _, r in rows(out_dir, "pipe"):
        if r.get("impl") != "augmentd" or config_key(r) != config or "sets_ms_eager" not in r:
            continue
        found.add(side)
        for i, (e, g) in enumerate(zip(r["sets_ms_eager"], r["sets_ms_graph"])):
            best[i][side] = min(best[i].get(side, float("inf")), e, g)
            stages[i] = int(r["set_stages"][i])
    return best, stages, side_order(found, wanted)


def set_table(out_dir, config, wanted):
    best, stages, sides = collect_sets(out_dir, config, wanted)
    if not best or not sides:
        print(f"ab_table.py: {out_dir}: no per-set times of '{config}'", file=sys.stderr)
        return False
    print()
    print(f"| {config}: set | stages | " + " | ".join(sides) + f" | vs {sides[0]} |")
    print("|---|---|" + "---|" * len(sides) + "---|")
    for i in sorted(best):
        row = [f"{best[i][s]:.4f}" if s in best[i] else "—" for s in sides]
        base = best[i].get(sides[0])
        rel = ", ".join(f"{s} {100.0 * (best[i][s] / base - 1.0):+.1f} %" for s in sides[1:] if s in best[i] and base)
        print(f"| {i} | 0x{stages[i]:03x} | " + " | ".join(row) + f" | {rel} |")
    return True


def collect_digests(out_dir, wanted):
    """{config: {side: set of digests over rounds}} and the sides in order, for the rows that carry a digest."""
    digests = collections.defaultdict(lambda: collections.defaultdict(set))
    found = set()
    for side, _, r in rows(out_dir, "pipe"):
        if r.get("impl") == "augmentd" and r.get("digest"):
            found.add(side)
            digests[config_key(r)][side].add(r["digest"])
    return digests, side_order(found, wanted)


def seg_variant(side):
    """The input a side's rows ran on: gpu-kernels-check.sh names a side's SEG_ARGS rows `<side>_seg`."""
    return "_seg" if side.endswith("_seg") else ""


def digest_table(digests, sides):
    """Prints the digest table; returns the number of cells that are not "same" (differ, rounds disagree, or no
    reference). Each side is compared with the first side of its own seg variant (the same inputs)."""
    if not digests or not sides:
        return 0
    refs = {}
    for side in sides:
        refs.setdefault(seg_variant(side), side)
    print()
    names = " and ".join(sorted(set(refs.values()), key=sides.index))
    print(f"| outputs (digests; reference: {names}) | " + " | ".join(sides) + " |")
    print("|---|" + "---|" * len(sides))
    bad = 0
    for key in digests:
        cells = []
        for side in sides:
            got = digests[key].get(side)
            ref_side = refs[seg_variant(side)]
            ref = digests[key].get(ref_side, set())
            if not got:
                cells.append("—")
            elif len(got) > 1:
                cells.append("rounds disagree")
                bad += 1
            elif side == ref_side:
                cells.append(next(iter(got)))
            elif len(ref) != 1:
                cells.append("no reference")
                bad += 1
            elif got == ref:
                cells.append("same")
            else:
                cells.append("DIFFERENT")
                bad += 1
        print(f"| {key} | " + " | ".join(cells) + " |")
    return bad


def table(cells, sides):
    if not cells or not sides:
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__.split("\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sides", default="", help="comma-separated side order (the first is the baseline)")
    ap.add_argument("--sets", default="", metavar="CONFIG", help="also the per-set table of this configuration")
    ap.add_argument("out_dirs", nargs="+", metavar="OUT_DIR")
    args = ap.parse_args(argv)
    wanted = [s for s in args.sides.split(",") if s]
    for out_dir in args.out_dirs:
        if not os.path.isdir(out_dir):
            print(f"ab_table.py: {out_dir}: not a directory", file=sys.stderr)
            return 2
        print(f"## {out_dir}")
        printed = False
        for prefix in ("pipe", "chain"):
            try:
                cells, sides = collect(out_dir, prefix, wanted)
            except (ValueError, KeyError, json.JSONDecodeError) as e:
                print(f"ab_table.py: {e}", file=sys.stderr)
                return 2
            table(cells, sides)
            printed |= bool(cells and sides)
        try:
            digests, dsides = collect_digests(out_dir, wanted)
        except (ValueError, KeyError, json.JSONDecodeError) as e:
            print(f"ab_table.py: {e}", file=sys.stderr)
            return 2
        if digest_table(digests, dsides):
            print(f"ab_table.py: {out_dir}: some outputs differ from {dsides[0]}'s or between rounds (digest table)",
                  file=sys.stderr)
        try:
            if args.sets and not set_table(out_dir, args.sets, wanted):
                return 1
        except (ValueError, KeyError, IndexError, json.JSONDecodeError) as e:
            print(f"ab_table.py: {e}", file=sys.stderr)
            return 2
        if not printed:
            print(f"ab_table.py: {out_dir}: no pipe-SIDE-ROUND.jsonl or chain-SIDE-ROUND.jsonl rows", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
