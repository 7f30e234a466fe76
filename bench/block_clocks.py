#!/usr/bin/env python3
"""The timeline of a chained batch, from cuda_pipeline_bench --block-clocks FILE (a -DAUGMENTD_BLOCK_CLOCKS=1 build).

Per configuration, the median over its recorded batches of, for each kernel in launch order (µs from the batch's first
block entry; %globaltimer, so each mark is as fine as the timer's own step, printed as `timer step`):

  entry        first and last block entry (thread 0's; the grid's dispatch)
  waited       first and last return from ChainWait (thread 0's; the dependency on the kernel before)
  exit         first, 90th percentile and last block exit (the block's last warp)
  after prev   this kernel's first wait return minus the previous kernel's last exit: what the dependency's release
               costs (negative: the previous kernel's last block had not yet left when the wait returned, as the
               completion counts its own trigger and flush)
  early        the share of this kernel's blocks that entered before the previous kernel's last exit (the kernel
               before it in the same batch, as for after prev): resident and waiting while it still ran (chained
               launches), rather than dispatched as its blocks left
  beside       the share of this kernel's blocks that entered a multiprocessor before the previous kernel's last
               block on that same multiprocessor left (the previous kernel as for early): sharing it with that
               kernel's tail. 0 % while early is not: the blocks waited for drained multiprocessors, as the blur
               does for the spatial kernel's (NOTES.md s53 / s54)
  tail         last exit minus the 90th percentile exit: the last tenth of the blocks
  busy         the device's multiprocessors' mean share of the kernel's span (first entry to last exit) holding a
               block of it (every multiprocessor counted, used or not: comparable with ncu's active / elapsed)
  block        median block time from wait return (or entry) to exit, and the same in the SM's cycles
  adds         this kernel's last exit minus the previous kernel's last exit (the first kernel's: from the batch's
               first entry): its share of the batch's critical path; in each batch the column sums to the last
               kernel's last exit, the batch's end as the kernels run in stream order (the medians printed, nearly,
               where every batch launches the same kernels)

Usage: bench/block_clocks.py FILE [--config SUBSTRING] [--batch N]
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import defaultdict

ORDER = ["spatial", "blur", "mid", "gamma0", "gamma2", "final"]


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))]


def busy_share(blocks: list[dict], t0: float, t1: float, sms: int) -> float:
    """Mean over the device's `sms` multiprocessors of the share of [t0, t1] they held one of the kernel's blocks."""
    if t1 <= t0:
        return 0.0
    per_sm: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for b in blocks:
        per_sm[b["smid"]].append((b["entry"], b["exit"]))
    shares = []
    for spans in per_sm.values():
        spans.sort()
        held, cur_s, cur_e = 0.0, None, None
        for s, e in spans:
            if cur_e is None or s > cur_e:
                if cur_e is not None:
                    held += cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        if cur_e is not None:
            held += cur_e - cur_s
        shares.append(held / (t1 - t0))
    return sum(shares) / max(sms, len(shares))


def beside_share(prev: list[dict], blocks: list[dict]) -> float:
    """The share of `blocks` that entered a multiprocessor before `prev`'s last block on it left."""
    last_exit: dict[int, float] = {}
    for b in prev:
        last_exit[b["smid"]] = max(last_exit.get(b["smid"], b["exit"]), b["exit"])
    return sum(b["entry"] < last_exit.get(b["smid"], float("-inf")) for b in blocks) / len(blocks)


def kernel_row(blocks: list[dict], sms: int) -> dict:
    entry = [b["entry"] for b in blocks]
    exits = [b["exit"] for b in blocks]
    waited = [b["waited"] for b in blocks if b["waited"] is not None]
    start = [b["waited"] if b["waited"] is not None else b["entry"] for b in blocks]
    cyc = [b["exit_cyc"] - (b["waited_cyc"] or 0) for b in blocks if b["exit_cyc"] is not None]
    return {
        "blocks": len(blocks),
        "sms": len({b["smid"] for b in blocks}),
        "entry0": min(entry), "entry1": max(entry),
        "waited0": min(waited) if waited else None, "waited1": max(waited) if waited else None,
        "exit0": min(exits), "exit90": pct(exits, 0.9), "exit1": max(exits),
        "busy": busy_share(blocks, min(entry), max(exits), sms),
        "block_us": statistics.median(e - s for e, s in zip(exits, start)),
        "block_cyc": statistics.median(cyc) if cyc else None,
    }


def read(path: str, config_filter: str | None):
    batches: dict[tuple[str, int], dict] = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if config_filter and config_filter not in r["config"]:
                continue
            key = (r["config"], int(r["batch"]))
            b = batches.setdefault(key, {"set": int(r["set"]), "ms": float(r["batch_ms"]), "sms": int(r["sms"]),
                                         "kernels": defaultdict(list)})

            def num(k, scale=1e-3):
                return float(r[k]) * scale if r[k] != "" else None

            b["kernels"][r["kernel"]].append({
                "smid": int(r["smid"]), "entry": num("entry_ns"), "waited": num("waited_ns"),
                "exit": num("exit_ns"), "waited_cyc": num("waited_cyc", 1), "exit_cyc": num("exit_cyc", 1),
            })
    return batches


def timer_step(batches) -> float:
    """The smallest non-zero difference between two marks of one batch: the timer's step as seen (µs)."""
    best = float("inf")
    for b in batches.values():
        marks = sorted({x["entry"] for k in b["kernels"].values() for x in k} |
                       {x["exit"] for k in b["kernels"].values() for x in k})
        best = min([best] + [y - x for x, y in zip(marks, marks[1:]) if y > x])
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--config", help="only configurations whose name contains this")
    ap.add_argument("--batch", type=int, help="only this recorded batch (default: the median over all)")
    a = ap.parse_args()
    try:
        batches = read(a.file, a.config)
    except OSError as e:
        print(f"{a.file}: cannot read: {e.strerror}", file=sys.stderr)
        return 1
    except (KeyError, ValueError) as e:
        print(f"{a.file}: not a --block-clocks CSV (column or value {e} not as cuda_pipeline_bench writes it)",
              file=sys.stderr)
        return 1
    if a.batch is not None:
        batches = {k: v for k, v in batches.items() if k[1] == a.batch}
    if not batches:
        print(f"{a.file}: no recorded blocks{' for ' + a.config if a.config else ''}", file=sys.stderr)
        return 1
    print(f"timer step as seen: {timer_step(batches):.3f} µs")
    for config in sorted({k[0] for k in batches}):
        mine = [v for k, v in sorted(batches.items()) if k[0] == config]
        rows: dict[str, list[dict]] = defaultdict(list)
        for b in mine:
            prev_exit, prev_name = None, None
            for name in [n for n in ORDER if n in b["kernels"]] + sorted(set(b["kernels"]) - set(ORDER)):
                row = kernel_row(b["kernels"][name], b["sms"])
                row["after_prev"] = (row["waited0"] - prev_exit
                                     if prev_exit is not None and row["waited0"] is not None else None)
                row["early"] = (sum(x["entry"] < prev_exit for x in b["kernels"][name]) / row["blocks"]
                                if prev_exit is not None else None)
                row["beside"] = (beside_share(b["kernels"][prev_name], b["kernels"][name])
                                 if prev_name is not None else None)
                row["adds"] = row["exit1"] - (prev_exit if prev_exit is not None else 0.0)
                prev_exit, prev_name = row["exit1"], name
                rows[name].append(row)
        ends = [max(x["exit"] for k in b["kernels"].values() for x in k) for b in mine]
        print(f"\n## {config}: {len(mine)} batches (sets {sorted({b['set'] for b in mine})}), event time median "
              f"{statistics.median(b['ms'] for b in mine) * 1e3:.1f} µs, first entry to last exit median "
              f"{statistics.median(ends):.1f} µs\n")
        print("| kernel | blocks | SMs | entry | waited | exit (first / p90 / last) | after prev | early | beside | "
              "tail | busy | block µs | block cycles | adds |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")

        def med(name, key, fmt="{:.1f}"):
            vals = [r[key] for r in rows[name] if r[key] is not None]
            return fmt.format(statistics.median(vals)) if vals else "–"

        # launch order (ORDER), as in each batch: "after prev" and "early" compare with the kernel before in that batch
        for name in [n for n in ORDER if n in rows] + sorted(set(rows) - set(ORDER)):
            tail = statistics.median(r["exit1"] - r["exit90"] for r in rows[name])
            print(f"| {name} | {med(name, 'blocks', '{:.0f}')} | {med(name, 'sms', '{:.0f}')} | "
                  f"{med(name, 'entry0')} … {med(name, 'entry1')} | {med(name, 'waited0')} … {med(name, 'waited1')} | "
                  f"{med(name, 'exit0')} / {med(name, 'exit90')} / {med(name, 'exit1')} | {med(name, 'after_prev')} | "
                  f"{med(name, 'early', '{:.0%}')} | {med(name, 'beside', '{:.0%}')} | {tail:.1f} | "
                  f"{med(name, 'busy', '{:.0%}')} | "
                  f"{med(name, 'block_us', '{:.2f}')} | {med(name, 'block_cyc', '{:.0f}')} | {med(name, 'adds')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
