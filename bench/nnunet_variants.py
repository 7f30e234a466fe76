"""Which nnU-Net trainer classes augmentd serves: every class under nnunetv2/training/nnUNetTrainer/variants/,
translated (augmentd.nnunet.check.walk_variants, built-in example plans, 3d_fullres) or refused with the reason.

    PYTHONPATH=client/python/src .venv/bin/python bench/nnunet_variants.py [--out FILE.md] [--figures FILE.jsonl]

Prints (and writes with --out) a markdown table: class, module, how the training pipeline is sent (preset fast path
or explicit list), entries, crop; --figures appends the variants_total / variants_translated JSON lines.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="write the markdown table to this file")
    ap.add_argument("--figures", default=None, help="append the headline figures (JSON lines) to this file")
    args = ap.parse_args()

    import nnunetv2
    from importlib.metadata import version

    from augmentd.nnunet.check import variant_classes, walk_variants
    from augmentd.v1 import pipeline_pb2

    classes = {c.__name__: c for c in variant_classes()}
    results = walk_variants()
    rows = ["| trainer | module | training pipeline | entries (train / val) | crop |", "|---|---|---|---|---|"]
    for r in results:
        module = classes[r.trainer].__module__.removeprefix("nnunetv2.training.nnUNetTrainer.variants.")
        if r.ok:
            tr = r.translation
            how = (f"preset `{pipeline_pb2.Preset.Name(tr.train_preset).removeprefix('PRESET_').lower()}`"
                   if tr.train_preset else "explicit list")
            rows.append(f"| {r.trainer} | {module} | {how} | {len(tr.train.entries)} / {len(tr.val.entries)} | "
                        f"{'×'.join(map(str, tr.initial_patch_size))} |")
        else:
            why = r.reason.split(": ", 1)[-1].split(";")[0]
            why = why.replace(f"by {classes[r.trainer].__module__}.{r.trainer}", "by the class")
            rows.append(f"| {r.trainer} | {module} | **refused**: {why} | – | – |")
    total, translated = len(results), sum(r.ok for r in results)
    head = (f"nnU-Net {version('nnunetv2')}, batchgeneratorsv2 "
            f"{version('batchgeneratorsv2')}: {translated} of {total} variant trainer classes translated.")
    text = head + "\n\n" + "\n".join(rows) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    if args.figures:
        today = datetime.date.today().isoformat()
        machine = f"{platform.node() or 'dev'} CPU (no GPU needed)"
        with open(args.figures, "a") as f:
            # baseline: before the translation only augmentd's own two classes ran; no variant class did
            for metric, value, baseline in (("variants_total", total, None),
                                            ("variants_translated", translated, 0)):
                f.write(json.dumps({"issue": 24, "metric": metric, "value": value, "unit": "trainer classes",
                                    "date": today, "machine": machine, "baseline": baseline,
                                    "nnunetv2": version("nnunetv2")}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
