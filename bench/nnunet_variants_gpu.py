"""Translated nnU-Net variant trainers on a GPU: where each training session runs (CUDA engine, or the CPU engine the
server falls back to when its fused kernels do not cover a translated pipeline — it says so, never pretends) and
ms per batch, against the same trainer's own nnU-Net loader (nnUNet_n_proc_DA processes) on the same data.

    python bench/nnunet_variants_gpu.py --work /tmp/nnunet-variants --out table.md [--batches 40] [TRAINER ...]

Needs a CUDA GPU, nnunetv2 and $AUGMENTD_BIN. Builds the tiny synthetic dataset of tests/python/dataset (real
nnUNetv2_plan_and_preprocess) under --work, patch 64³ (batch 2).
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ["nnUNetTrainer", "nnUNetTrainerNoMirroring", "nnUNetTrainer_DASegOrd0", "nnUNetTrainerDA5",
           "nnUNetTrainerDA5ord0", "nnUNetTrainerDA5Segord0", "nnUNetTrainerNoDA", "nnUNetTrainer_onlyMirror01"]


def _batches(loader, n):
    import torch

    next(loader)
    t0 = time.perf_counter()
    for _ in range(n):
        b = next(loader)
        if isinstance(b["data"], torch.Tensor) and b["data"].is_cuda:
            torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trainers", nargs="*", default=DEFAULT)
    ap.add_argument("--work", default="/tmp/nnunet-variants")
    ap.add_argument("--out", default=None)
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--device", default="cuda:0", help="trainer device (cpu: a dry run of this script)")
    args = ap.parse_args()
    sys.path[:0] = [str(ROOT / "tests/python/dataset"), str(ROOT / "client/python/src")]
    work = Path(args.work)
    os.environ.update(nnUNet_raw=str(work / "raw"), nnUNet_preprocessed=str(work / "preprocessed"),
                      nnUNet_results=str(work / "results"), nnUNet_compile="false")
    import synth_nnunet

    pre = work / "preprocessed" / synth_nnunet.DATASET_NAME
    if not (pre / "splits_final.json").is_file():
        synth_nnunet.preprocess(work)
    import torch
    from nnunetv2.utilities.find_objects import recursive_find_trainer_class_by_name

    from augmentd.nnunet.dynamic import augmentd_trainer
    from augmentd.nnunet.timing import shrink_network

    plans = shrink_network(json.loads((pre / "nnUNetPlans.json").read_text()), "3d_fullres")
    plans["continue_training"] = False
    plans["configurations"]["3d_fullres"]["patch_size"] = [64, 64, 64]
    dataset_json = json.loads((pre / "dataset.json").read_text())
    rows = ["| trainer | sent as | augmentd session on | augmentd ms/batch | nnU-Net loader ms/batch |",
            "|---|---|---|---|---|"]
    for name in args.trainers:
        base = recursive_find_trainer_class_by_name(name)
        result = {}
        for label, cls in (("augmentd", augmentd_trainer(base)), ("nnunet", base)):
            trainer = cls(copy.deepcopy(plans), "3d_fullres", 0, dataset_json, torch.device(args.device))
            trainer.initialize()
            train, val = trainer.get_dataloaders()
            try:
                result[label] = _batches(train, args.batches)
                if label == "augmentd":
                    cfg = train.session.config if hasattr(train.session, "config") else None
                    result["device"] = train.session.device
                    from augmentd.v1 import pipeline_pb2
                    result["sent"] = ("preset " + pipeline_pb2.Preset.Name(cfg.pipeline.preset).lower()[7:]) \
                        if cfg and cfg.pipeline.preset else "explicit list"
            finally:
                if hasattr(trainer, "_augmentd_close"):
                    trainer._augmentd_close()
                else:
                    for loader in (train, val):
                        getattr(loader, "_finish", lambda: None)()
        rows.append(f"| {name} | {result['sent']} | {result['device']} | {result['augmentd']:.2f} | "
                    f"{result['nnunet']:.2f} |")
        print(rows[-1], flush=True)
    gpu = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "CPU"
    text = (f"{gpu}, nnUNet_n_proc_DA={os.environ.get('nnUNet_n_proc_DA', 'default')}, "
            f"{args.batches} batches of 2×64³ after one warm-up\n\n" + "\n".join(rows) + "\n")
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
