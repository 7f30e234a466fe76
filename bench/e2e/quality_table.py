"""Tables and headline figures of the ``quality`` stage (issue 26; run_quality.py).

A run record: ``aug`` (default / da5), ``loader`` (nnunet / augmentd), ``trainer``, ``seed``, ``val_dice`` and
``test_dice`` (nnU-Net's foreground mean Dice: the mean over labels of the per-label mean over cases),
``val_dice_labels`` / ``test_dice_labels`` ({label: Dice}), ``epochs``, ``train_s``; or ``error`` / ``skipped``.

Target (the issue's): augmentd's mean Dice within the seed-to-seed spread (max − min over seeds) of nnU-Net's own
loader with the same trainer — met when mean(augmentd) ≥ mean(nnU-Net) − spread(nnU-Net) (a higher Dice meets it
too; the table says so).
"""
from __future__ import annotations

import math
import statistics

PAIRS = {"default": ("nnUNetTrainer", "nnUNetTrainerAugmentd"),
         "da5": ("nnUNetTrainerDA5", "nnUNetTrainerAugmentdDA5")}
LABEL_NAMES = {"1": "vessel", "2": "lesion"}


def _num(v) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)


def _f(v, fmt="{:.3f}") -> str:
    return fmt.format(v) if _num(v) else "–"


def _cell(text, limit=160) -> str:
    text = " ".join(str(text).replace("|", "/").split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def group(runs, aug: str, loader: str, key: str):
    """The finite ``key`` values (val_dice / test_dice) of the runs of one augmentation and loader, by seed."""
    return [r[key] for r in sorted(runs, key=lambda r: r.get("seed", 0))
            if r.get("aug") == aug and r.get("loader") == loader and _num(r.get(key))]


def stats(values):
    """(mean, spread = max − min, n) of a list of Dice values; (None, None, 0) if empty, spread None for one."""
    if not values:
        return None, None, 0
    return statistics.fmean(values), (max(values) - min(values)) if len(values) > 1 else None, len(values)


def verdict(runs, aug: str, key: str = "test_dice"):
    """(difference augmentd − nnU-Net of the seed means, nnU-Net's spread, text)."""
    nn_mean, nn_spread, _ = stats(group(runs, aug, "nnunet", key))
    ad_mean, _, _ = stats(group(runs, aug, "augmentd", key))
    if nn_mean is None or ad_mean is None:
        return None, nn_spread, "not measured"
    diff = ad_mean - nn_mean
    if nn_spread is None:
        return diff, None, f"{diff:+.3f}; no spread (one seed of nnU-Net's loader)"
    if diff >= -nn_spread:
        extra = " (augmentd higher by more than the spread)" if diff > nn_spread else ""
        return diff, nn_spread, f"met: {diff:+.3f} within ±{nn_spread:.3f}{extra}"
    return diff, nn_spread, f"MISSED: {diff:+.3f}, spread {nn_spread:.3f}"


def _labels(d) -> str:
    if not d:
        return ""
    return " (" + " / ".join(f"{LABEL_NAMES.get(str(k), k)} {_f(v)}" for k, v in sorted(d.items())) + ")"


def render_quality(runs, meta) -> str:
    if not runs:
        return ""
    d = meta.get("dataset", {})
    s = meta.get("schedule", {})
    out = ["## Training quality: nnU-Net's own loader vs augmentd, same trainer, same schedule", "",
           f"{meta.get('date', '')}, {meta.get('machine', '')}. Real `nnUNetv2_train` (3d_fullres, fold 0) to "
           f"nnU-Net's own final validation, then `nnUNetv2_predict` on the held-out test set and nnU-Net's "
           f"`compute_metrics_on_folder`. Schedule: {s.get('epochs', '?')} epochs × {s.get('iters', '?')} iterations "
           f"(+{s.get('val_iters', '?')} validation iterations per epoch; nnU-Net's default is 1000 × 250), patch "
           f"{d.get('patch_size', '?')}, batch {d.get('batch_size', '?')}, spacing "
           f"{[round(v, 2) for v in d['spacing']] if d.get('spacing') else '?'} mm; "
           f"{d.get('fold0_train', '?')} training / {d.get('fold0_val', '?')} validation cases (fold 0), "
           f"{d.get('test_cases', '?')} test cases with a shifted acquisition (bench/e2e/README.md); test "
           f"prediction {'with' if meta.get('tta') else 'without'} mirroring. Dice: foreground mean (vessel / lesion)."
           + (f" Command: `{meta['command']}`." if meta.get("command") else ""), "",
           "| augmentation | nnU-Net's loader: test Dice, mean of seeds (spread) | augmentd: test Dice (spread) | "
           "augmentd − nnU-Net | validation Dice nnU-Net / augmentd (spread) | "
           "target: within nnU-Net's seed spread |",
           "|---|---|---|---|---|---|"]
    for aug in ("default", "da5"):
        if not any(r.get("aug") == aug for r in runs):
            continue
        nn = stats(group(runs, aug, "nnunet", "test_dice"))
        ad = stats(group(runs, aug, "augmentd", "test_dice"))
        nv = stats(group(runs, aug, "nnunet", "val_dice"))
        av = stats(group(runs, aug, "augmentd", "val_dice"))
        diff, _, text = verdict(runs, aug)
        out.append(f"| {aug} (`{PAIRS[aug][0]}` / `{PAIRS[aug][1]}`) | {_f(nn[0])} ({_f(nn[1])}, {nn[2]} seeds) | "
                   f"{_f(ad[0])} ({_f(ad[1])}, {ad[2]} seeds) | {_f(diff, '{:+.3f}')} | "
                   f"{_f(nv[0])} ({_f(nv[1])}) / {_f(av[0])} ({_f(av[1])}) | "
                   f"{text} |")
    out += ["", "| run | seed | validation Dice (nnU-Net's final validation) | test Dice | epochs | train s |",
            "|---|---|---|---|---|---|"]
    for r in sorted(runs, key=lambda r: (r.get("aug") != "default", r.get("loader") != "nnunet", r.get("seed", 0))):
        name = f"`{r.get('trainer')}`"
        if r.get("error") or r.get("skipped"):
            why = f"skipped: {r['skipped']}" if r.get("skipped") else f"FAILED: {r['error']}"
            out.append(f"| {name} | {r.get('seed')} | {_cell(why)} | {_f(r.get('test_dice'))} | "
                       f"{r.get('epochs', '–')} | {_f(r.get('train_s'), '{:.0f}')} |")
            continue
        out.append(f"| {name} | {r.get('seed')} | {_f(r.get('val_dice'))}{_labels(r.get('val_dice_labels'))} | "
                   f"{_f(r.get('test_dice'))}{_labels(r.get('test_dice_labels'))} | {r.get('epochs', '–')} | "
                   f"{_f(r.get('train_s'), '{:.0f}')} |")
    return "\n".join(out) + "\n"


def quality_figures(runs, meta, issue=26):
    """quality_dice_{nnunet,augmentd}_{default,da5} (test Dice, mean of seeds) and
    quality_dice_spread_nnunet_default (max − min of nnUNetTrainer's test Dice over seeds)."""
    date, machine = str(meta.get("date", ""))[:10], meta.get("machine", "")
    figures = []
    for aug in ("default", "da5"):
        nn_mean, nn_spread, nn_n = stats(group(runs, aug, "nnunet", "test_dice"))
        for loader in ("nnunet", "augmentd"):
            mean, spread, n = stats(group(runs, aug, loader, "test_dice"))
            if mean is None:
                continue
            val = stats(group(runs, aug, loader, "val_dice"))[0]
            fig = {"issue": issue, "metric": f"quality_dice_{loader}_{aug}", "value": round(mean, 4),
                   "unit": "Dice (test set, foreground mean, mean of seeds)", "date": date, "machine": machine,
                   "baseline": None if loader == "nnunet" else
                   {"what": "nnU-Net's own loader, same trainer and schedule", "value": round(nn_mean, 4)
                    if nn_mean is not None else None},
                   "seeds": n, "spread": round(spread, 4) if spread is not None else None,
                   "validation_dice": round(val, 4) if val is not None else None}
            figures.append(fig)
        if aug == "default" and nn_spread is not None:
            figures.append({"issue": issue, "metric": "quality_dice_spread_nnunet_default",
                            "value": round(nn_spread, 4), "unit": "Dice (max − min over seeds, test set)",
                            "date": date, "machine": machine, "baseline": None, "seeds": nn_n})
    return figures
