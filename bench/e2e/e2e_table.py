"""Tables of the end-to-end benchmark (run_e2e.py): single-process runs per augmentation, and multi-tenant runs.

``render(results, meta)`` → markdown; ``multi_row(...)`` summarises the per-process results of one multi-tenant
run (aggregate and per-session samples/s over the common window, fairness max/min, p99 batch wait, memory).
"""
from __future__ import annotations

import statistics

from repeats import HOW, aggregate, runs_text

KIND = {"a": "(a) nnU-Net loader", "b": "(b) augmentd", "c": "(c) compute only"}


def _pct(values, q):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q / 100 * (len(s) - 1)))))]


def _f(v, fmt="{:.1f}"):
    return "–" if v is None else fmt.format(v)


def _cell(text, limit=300) -> str:
    """Free text (an error) as one table cell: no pipes or newlines, bounded length."""
    text = " ".join(str(text).replace("|", "/").split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def multi_row(label, tenants, variant, gpus, sessions, gpu):
    rates = [s["samples_per_s"] for s in sessions]
    waits = [w for s in sessions for w in s["wait_ms"]]
    deliveries = sorted({s["delivery"] for s in sessions})
    return {
        "label": label, "stage": "multi", "tenants": tenants, "variant": variant, "gpus": gpus,
        "aggregate_samples_per_s": round(sum(rates), 3),
        "per_session_samples_per_s": [round(r, 3) for r in rates],
        "fairness": round(max(rates) / min(rates), 4) if min(rates) > 0 else float("inf"),
        "wait_ms_p99_pooled": round(_pct(waits, 99), 3),
        "wait_ms_p99_worst_session": round(max(s["wait_ms_p99"] for s in sessions), 3),
        "wait_ms_median_pooled": round(_pct(waits, 50), 3),
        "ms_per_iter_median": round(statistics.median(s["ms_per_iter_median"] for s in sessions), 3),
        "step_ms_median": round(statistics.median(s["step_ms_median"] for s in sessions), 3),
        "iters_total": sum(s["iters"] for s in sessions),
        "window_s": round(statistics.median(s["window_s"] for s in sessions), 3),
        "mem_reserved_mib_per_process_max": max((s["max_mem_reserved_mib"] or 0) for s in sessions),
        "gpu_mem_mib_max": gpu.get("gpu_mem_mib_max", {}), "gpu_util_smi_mean": gpu.get("gpu_util_smi_mean", {}),
        "gpu_util_nvml_mean": round(statistics.mean(s["gpu_util_mean"] for s in sessions), 1)
        if all(s.get("gpu_util_mean") is not None for s in sessions) else None,
        "delivery": ", ".join(deliveries),
        "delivery_errors": sorted({s.get("delivery_errors", "") for s in sessions} - {""}),
        "loss_finite": all(s["loss_finite"] for s in sessions),
        "sessions": [{k: s[k] for k in ("label", "device", "iters", "samples_per_s", "wait_ms_p99",
                                         "ms_per_iter_median")} for s in sessions],
    }


def _rel(r, compute, stat):
    """r's ms per iteration relative to compute's, by `stat` (median / mean), e.g. "+2.2 %"; "–" if unknown."""
    a, c = r.get(f"ms_per_iter_{stat}"), compute.get(f"ms_per_iter_{stat}")
    return f"{100 * (a / c - 1):+.1f} %" if a and c else "–"


def _single(rows, stage):
    rows = [r for r in rows if r.get("stage") == stage]
    if not rows:
        return []
    title = {"default": "default augmentation (nnUNetTrainer)", "da5": "DA5 augmentation (nnUNetTrainerDA5)",
             "2d": "configuration 2d (nnUNetTrainer)",
             "cascade": "configuration 3d_cascade_fullres (nnUNetTrainer)"}.get(stage, stage)
    # With --repeats a kind has several rows (``rep`` 0, 1, …): each is shown; "vs (c)" and the target use the
    # aggregate (repeats.py: the median over repeats of the per-run medians). One run: the aggregate is that run.
    compute = aggregate([r for r in rows if r.get("kind") == "c"])
    out = [f"### {title}", "",
           "| run | loader / delivery | ms/iter median / mean | vs (c) median / mean | wait ms median / p99 | "
           "wait % of time | step ms (median) | samples/s | GPU util % | iters |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        name = f"{KIND.get(r.get('kind'), '')} `{r['label']}`"
        if "ms_per_iter_median" not in r:
            out.append(f"| {name} | {_cell(r.get('skipped') or 'FAILED: ' + str(r.get('error')))} |||||||||")
            continue
        if r["kind"] == "a":
            loader = f"nnUNet_n_proc_DA={r['n_proc_da']}"
        elif r["kind"] == "b":
            loader = r["delivery"] + (" (fallback)" if r.get("delivery_errors") else "")
        else:
            loader = r["delivery"]
        vs = "–"
        if compute and not (r["kind"] == "c" and compute["n"] == 1):
            vs = f"{_rel(r, compute, 'median')} / {_rel(r, compute, 'mean')}"
        out.append(f"| {name} | {loader} | {r['ms_per_iter_median']:.1f} / {_f(r.get('ms_per_iter_mean'))} | {vs} | "
                   f"{r['wait_ms_median']:.2f} / {r['wait_ms_p99']:.2f} | {100 * r['wait_fraction']:.1f} | "
                   f"{r['step_ms_median']:.1f} | {r['samples_per_s']:.2f} | {_f(r.get('gpu_util_mean'))} | "
                   f"{r['iters']} |")
    b = aggregate([r for r in rows if r.get("kind") == "b"])
    several = {k: a for k, a in (("c", compute), ("b", b)) if runs_text(a)}
    if several:
        out += ["", f"Repeats, run alternately (c, b, c, b, …); the target below and the figure use the {HOW} "
                    "(each row's vs (c): against that median): "
                    + "; ".join(f"({k}) {a['ms_per_iter_median']:.1f} ms, {runs_text(a)}" for k, a in several.items())
                    + "."]
    if b and compute:
        # The target is on the median iteration; the mean shows a loader whose tail still stalls the trainer.
        d = 100 * (b["ms_per_iter_median"] / compute["ms_per_iter_median"] - 1)
        out += ["", f"Target (b) within 3 % of (c): {d:+.1f} % → {'met' if d <= 3 else 'MISSED'} "
                    f"(mean: {_rel(b, compute, 'mean')})."]
        if b.get("delivery_errors"):
            out.append(f"(b) delivery fallback: {_cell(b['delivery_errors'])}")
    return out + [""]


def _multi(rows):
    rows = [r for r in rows if r.get("stage") == "multi"]
    if not rows:
        return []
    out = ["### Multi-tenant: concurrent trainings on one augmentd", "",
           "| run | tenants / GPUs | aggregate samples/s | per-session samples/s min / median / max | "
           "fairness max/min | batch wait p99 ms pooled / worst session | ms/iter (median) | "
           "GPU memory MiB (nvidia-smi max) | GPU util % | service CPU cores | delivery |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "aggregate_samples_per_s" not in r:
            out.append(f"| `{r['label']}` | {r.get('tenants')} | "
                       f"{_cell(r.get('skipped') or 'FAILED: ' + str(r.get('error')))} |||||||||")
            continue
        rates = r["per_session_samples_per_s"]
        mem = ", ".join(f"gpu{k}: {v:.0f}" for k, v in sorted(r["gpu_mem_mib_max"].items())) or \
            f"{r['mem_reserved_mib_per_process_max']} per process (torch)"
        util = ", ".join(f"gpu{k}: {v:.0f}" for k, v in sorted(r["gpu_util_smi_mean"].items())) or \
            _f(r.get("gpu_util_nvml_mean"))
        delivery = r["delivery"] if r["variant"].startswith("augmentd") else "compute only (no loading)"
        out.append(f"| `{r['label']}` | {r['tenants']} / {r['gpus']} | {r['aggregate_samples_per_s']:.2f} | "
                   f"{min(rates):.2f} / {statistics.median(rates):.2f} / {max(rates):.2f} | {r['fairness']:.3f} | "
                   f"{r['wait_ms_p99_pooled']:.2f} / {r['wait_ms_p99_worst_session']:.2f} | "
                   f"{r['ms_per_iter_median']:.1f} | {mem} | {util} | {_f(r.get('service_cpu_cores'), '{:.2f}')} | {delivery} |")
    for r in rows:
        if r.get("variant") == "augmentd" and r.get("tenants") == 8 and "fairness" in r:
            ok = r["fairness"] <= 1.10
            out += ["", f"Target 8 sessions fair within 10 %: max/min {r['fairness']:.3f} → "
                        f"{'met' if ok else 'MISSED'}."]
    return out + [""]


def render(results, meta) -> str:
    d = meta.get("dataset", {})
    head = ["## End-to-end: nnU-Net 3d_fullres training fed by augmentd vs nnU-Net's own loader", "",
            f"{meta.get('date', '')}, {meta.get('machine') or meta.get('device', '')}; dataset "
            f"{d.get('cases', '?')} synthetic cases (~{d.get('params', {}).get('shape', '?')}³, nnU-Net planned and "
            f"preprocessed), patch {d.get('patch_size', '?')}, batch {d.get('batch_size', '?')}; "
            f"{meta.get('warmup')} warm-up iterations, then up to {meta.get('iters')} timed "
            f"(at most {meta.get('run_seconds')} s; multi-tenant window {meta.get('multi_seconds')} s). "
            "wait = time in next(dataloader); step = train_step (ends with loss.cpu()).", ""]
    body = _single(results, "default") + _single(results, "da5") + _single(results, "2d") + \
        _single(results, "cascade") + _multi(results)
    return "\n".join(head + body)
