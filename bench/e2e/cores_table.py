"""Table and headline figures of the end-to-end benchmark's ``cores`` stage (issue 26; run_e2e.py).

Each run of the stage is one record of ``run_e2e.py`` with ``stage="cores"``, ``aug`` (default / da5), ``cores``
(N, the run was pinned to N cores with nnUNet_n_proc_DA = N - 1) and ``kind``: ``c`` compute only, ``b`` the
augmentd trainer, ``a`` nnU-Net's own loader. ``render_cores(results, meta)`` → markdown (one table per
augmentation, a row per N); ``cores_figures(results, meta)`` → the figures.jsonl objects
``e2e_cores{N}_{aug}_pct_{augmentd,nnunet}`` (ms/iter median over compute only's, percent).

With ``--cores-compute once`` compute only ran at the smallest N only: every N is compared with it (the table says
at which N it was measured).
"""
from __future__ import annotations

EPOCH_ITERS = 250  # nnU-Net's num_iterations_per_epoch
TRAINERS = {"default": ("nnUNetTrainer", "nnUNetTrainerAugmentd"),
            "da5": ("nnUNetTrainerDA5", "nnUNetTrainerAugmentdDA5")}


def _ok(r) -> bool:
    return r is not None and r.get("ms_per_iter_median") is not None


def _cell_text(text, limit=160) -> str:
    text = " ".join(str(text).replace("|", "/").split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def pct_over(r, compute, stat="median"):
    """Percent by which r's ms/iter (``stat``: median / mean) exceeds compute only's; None if either is missing."""
    if not (_ok(r) and _ok(compute)):
        return None
    a, c = r.get(f"ms_per_iter_{stat}"), compute.get(f"ms_per_iter_{stat}")
    return 100.0 * (a / c - 1.0) if a and c else None


def epoch_seconds(r):
    """Seconds of one nnU-Net epoch (250 training iterations) at r's mean ms/iter (the mean: an epoch is a sum)."""
    mean = r.get("ms_per_iter_mean") if r else None
    return EPOCH_ITERS * mean / 1000.0 if mean else None


def cores_grid(results):
    """{aug: {N: {"a"|"b"|"c": record}}} of the cores stage, plus each aug's compute fallback: with compute only
    measured once, the N that lacks its own gets the aug's compute record at the smallest N (key ``c_from``)."""
    grid = {}
    for r in results:
        if r.get("stage") != "cores":
            continue
        grid.setdefault(r["aug"], {}).setdefault(r["cores"], {})[r.get("kind")] = r
    for aug, per_n in grid.items():
        measured = [n for n in sorted(per_n) if _ok(per_n[n].get("c"))]
        for n, runs in per_n.items():
            if not _ok(runs.get("c")) and measured and (_ok(runs.get("a")) or _ok(runs.get("b"))):
                runs["c_from"] = measured[0]
                runs["c"] = per_n[measured[0]]["c"]
    return grid


def _run_cell(r, compute, with_pct: bool) -> str:
    if r is None:
        return "–"
    if not _ok(r):
        return _cell_text(f"skipped: {r['skipped']}" if r.get("skipped") else f"FAILED: {r.get('error')}")
    mean = r.get("ms_per_iter_mean")
    text = f"{r['ms_per_iter_median']:.1f} / {mean:.1f} ms" if mean else f"{r['ms_per_iter_median']:.1f} ms"
    if with_pct:
        pm, pa = pct_over(r, compute, "median"), pct_over(r, compute, "mean")
        if pm is not None:
            text += f" ({pm:+.1f} %" + (f" / {pa:+.1f} %)" if pa is not None else ")")
    util = r.get("gpu_util_mean")
    parts = [text, f"GPU busy {util:.0f} %" if util is not None else "GPU busy –"]
    if r.get("samples_per_s") is not None:
        parts.append(f"{r['samples_per_s']:.1f} samples/s")
    ep = epoch_seconds(r)
    if ep is not None:
        parts.append(f"epoch {ep:.0f} s")
    return ", ".join(parts)


def render_cores(results, meta) -> str:
    grid = cores_grid(results)
    if not grid:
        return ""
    d = meta.get("dataset", {})
    out = ["## Few cores per GPU: the whole training pinned to N cores (`taskset -c`), nnUNet_n_proc_DA = N − 1", "",
           f"{meta.get('date', '')}, {meta.get('machine') or meta.get('device', '')}; dataset "
           f"{d.get('cases', '?')} synthetic cases (~{d.get('params', {}).get('shape', '?')}³), patch "
           f"{d.get('patch_size', '?')}, batch {d.get('batch_size', '?')}; {meta.get('warmup')} warm-up iterations, "
           f"then up to {meta.get('iters')} timed (at most {meta.get('run_seconds')} s)."
           + (f" Command: `{meta['command']}`." if meta.get("command") else ""),
           "Cells: ms/iter median / mean (vs compute only, median / mean), GPU busy % (NVML, sampled every 50 ms "
           f"over the timed window), samples/s, and the epoch time that follows ({EPOCH_ITERS} iterations at the "
           "mean). The augmentd trainer's local server runs inside the same N cores.", ""]
    for aug in ("default", "da5"):
        if aug not in grid:
            continue
        nn, augd = TRAINERS[aug]
        out += [f"### {'default augmentation' if aug == 'default' else 'DA5 augmentation'}", "",
                f"| cores (nnUNet_n_proc_DA) | compute only | `{augd}` | nnU-Net's own loader (`{nn}`) |",
                "|---|---|---|---|"]
        for n in sorted(grid[aug]):
            runs = grid[aug][n]
            compute = runs.get("c")
            c_cell = _run_cell(compute, None, False)
            if runs.get("c_from") is not None:
                c_cell = f"(measured at N = {runs['c_from']}) {c_cell}"
            out.append(f"| {n} ({n - 1}) | {c_cell} | {_run_cell(runs.get('b'), compute, True)} | "
                       f"{_run_cell(runs.get('a'), compute, True)} |")
        out.append("")
    return "\n".join(out) + "\n"


def cores_figures(results, meta, issue=26):
    """figures.jsonl objects: ms/iter median over compute only's, percent, per N, augmentation and loader."""
    figures = []
    date = str(meta.get("date", ""))[:10]
    machine = meta.get("machine") or meta.get("device", "")
    for aug, per_n in sorted(cores_grid(results).items()):
        for n in sorted(per_n):
            runs = per_n[n]
            compute = runs.get("c")
            for kind, who in (("b", "augmentd"), ("a", "nnunet")):
                pct = pct_over(runs.get(kind), compute, "median")
                if pct is None:
                    continue
                figures.append({
                    "issue": issue, "metric": f"e2e_cores{n}_{aug}_pct_{who}", "value": round(pct, 2), "unit": "%",
                    "date": date, "machine": machine,
                    "baseline": {"what": f"compute only, ms/iter median, same run, N = {runs.get('c_from') or n}",
                                 "value": compute["ms_per_iter_median"]},
                    "ms_per_iter_median": runs[kind]["ms_per_iter_median"],
                    "ms_per_iter_mean": runs[kind].get("ms_per_iter_mean"),
                    "gpu_busy_pct": runs[kind].get("gpu_util_mean")})
    return figures
