"""Repeated runs of one kind (``--repeats``, run_e2e.py): their aggregate, as the tables and figures use it.

Two compute-only processes with the same workload differ by 1.5–1.7 % on the H200 (session 11; cudnn autotuning per
process is a plausible cause), so a single compute-only / augmentd pair cannot resolve a 3 % target. A stage then runs c, b, c, b, …
(alternating, so drift hits both kinds) and reports, per kind, the median over the repeats of each run's ms/iter
median. Nothing is dropped or chosen as best; every run's value is listed beside the aggregate.

``aggregate(records)`` → one record-like dict (``ms_per_iter_median`` etc. are medians over the successful runs;
``runs`` lists every successful run's ms/iter median in repeat order, ``n`` counts them, ``n_planned`` counts every
record, failed or skipped included) or None if no run succeeded.
"""
from __future__ import annotations

import statistics

HOW = "median over repeats of the per-run ms/iter medians"


def ok(r) -> bool:
    return r is not None and r.get("ms_per_iter_median") is not None


def aggregate(records):
    """The aggregate of one kind's runs (records of run_e2e.py, any order: sorted by ``rep``); None if none has a
    timing. With one successful run the aggregate's figures are that run's."""
    records = sorted(records, key=lambda r: r.get("rep", 0))
    done = [r for r in records if ok(r)]
    if not done:
        return None

    def med(key):
        values = [r[key] for r in done if r.get(key) is not None]
        return statistics.median(values) if values else None

    first = done[0]
    out = {k: v for k, v in first.items() if k not in ("ms_per_iter_median", "ms_per_iter_mean", "gpu_util_mean",
                                                         "samples_per_s", "rep", "label")}
    out.update(label=first.get("label"), ms_per_iter_median=med("ms_per_iter_median"),
               ms_per_iter_mean=med("ms_per_iter_mean"), gpu_util_mean=med("gpu_util_mean"),
               samples_per_s=med("samples_per_s"), runs=[r["ms_per_iter_median"] for r in done], n=len(done),
               n_planned=len(records), reps=[r.get("rep", 0) for r in done])
    return out


def runs_text(agg, fmt="{:.1f}") -> str:
    """"median of 2: 65.9, 67.3 ms" (and what was not measured) for an aggregate of several runs; "" for one run (today's cells)."""
    if agg is None or agg["n"] <= 1 and agg["n_planned"] <= 1:
        return ""
    text = f"median of {agg['n']}: " + ", ".join(fmt.format(v) for v in agg["runs"]) + " ms"
    if agg["n_planned"] > agg["n"]:
        text += f" ({agg['n_planned'] - agg['n']} of {agg['n_planned']} repeats not measured)"
    return text
