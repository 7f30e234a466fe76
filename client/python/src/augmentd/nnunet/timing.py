"""ms per training iteration: nnUNetTrainerAugmentd against a compute-only trainer (what scripts/gpu-trainer-check.sh
runs).

    python -m augmentd.nnunet.timing --dataset 987 --iterations 50 [--device cuda] [--synthetic DIR] [--tiny]

Both trainers run nnU-Net's own ``train_step`` (forward, loss, backward, optimizer step) on batches of the
dataset's 3d_fullres configuration. ``nnUNetTrainerAugmentd`` takes every batch from augmentd; the compute-only
trainer takes one batch once, keeps it on the trainer's device and feeds it again every iteration (no data
loading, no host-to-device copy), so the difference is the time the data path adds to an iteration.
``--synthetic DIR`` builds (once) the tiny synthetic Dataset987 under DIR and uses it; ``--tiny`` narrows the
network (features ≤ 16) for CPU smoke runs. The delivery is AUGMENTD_DELIVERY's (default auto).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np


def shrink_network(plans: dict, configuration: str) -> dict:
    """``plans`` with the configuration's network narrowed to features ≤ 16 and one conv per stage (patch size,
    strides — hence deep-supervision scales — and batch size unchanged). For CPU tests and smoke runs."""
    arch = plans["configurations"][configuration]["architecture"]["arch_kwargs"]
    n = arch["n_stages"]
    arch["features_per_stage"] = [min(16, 4 * 2 ** i) for i in range(n)]
    arch["n_conv_per_stage"] = [1] * n
    arch["n_conv_per_stage_decoder"] = [1] * (n - 1)
    return plans


class _Repeat:
    """A loader that returns the same batch forever."""

    def __init__(self, batch: dict):
        self.batch = batch

    def __iter__(self):
        return self

    def __next__(self) -> dict:
        return self.batch


def _fixed_batch_trainer():
    from .trainer import nnUNetTrainerAugmentd

    class nnUNetTrainerFixedBatch(nnUNetTrainerAugmentd):
        """Compute only: one train and one val batch taken from augmentd once, kept on the device, reused."""

        def get_dataloaders(self):
            train, val = super().get_dataloaders()
            fixed = [self._to_device(next(train)), self._to_device(next(val))]
            self._augmentd_close()
            return _Repeat(fixed[0]), _Repeat(fixed[1])

        def _to_device(self, batch: dict) -> dict:
            target = batch["target"]
            move = lambda t: t.clone().to(self.device)  # noqa: E731 (clone: slot views die with the session)
            return {"data": move(batch["data"]), "keys": batch["keys"],
                    "target": [move(t) for t in target] if isinstance(target, list) else move(target)}

    return nnUNetTrainerFixedBatch


def time_trainer(cls, plans: dict, configuration: str, fold, dataset_json: dict, device, iterations: int,
                 warmup: int) -> dict:
    """Runs ``warmup`` + ``iterations`` train steps of a fresh ``cls`` trainer; per-iteration wall times (ms)."""
    import copy

    import torch

    trainer = cls(copy.deepcopy(plans), configuration, fold, dataset_json, device)
    trainer.on_train_start()
    try:
        trainer.on_train_epoch_start()
        times = []
        for i in range(warmup + iterations):
            start = time.perf_counter()
            trainer.train_step(next(trainer.dataloader_train))  # returns the loss on the CPU: synchronizes
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            if i >= warmup:
                times.append((time.perf_counter() - start) * 1e3)
    finally:
        trainer._augmentd_close()
    t = np.array(times)
    return {"trainer": cls.__name__, "iterations": iterations, "ms_per_iteration": float(t.mean()),
            "p50_ms": float(np.percentile(t, 50)), "p99_ms": float(np.percentile(t, 99))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m augmentd.nnunet.timing", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="987", help="dataset name or id (default: 987, the synthetic one)")
    parser.add_argument("--configuration", default="3d_fullres")
    parser.add_argument("--fold", default="0")
    parser.add_argument("--plans", default="nnUNetPlans")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--device", default=None, help="cuda or cpu (default: cuda if available)")
    parser.add_argument("--synthetic", default=None, help="build/use the synthetic Dataset987 under this folder")
    parser.add_argument("--tiny", action="store_true", help="narrow network (CPU smoke runs)")
    args = parser.parse_args(argv)

    if args.synthetic:
        from augmentd import demo

        work = Path(args.synthetic).resolve()
        demo.make_dataset(work)
        os.environ.update(nnUNet_raw=str(work / "raw"), nnUNet_preprocessed=str(work / "preprocessed"),
                          nnUNet_results=str(work / "results"))
    import torch
    from batchgenerators.utilities.file_and_folder_operations import join, load_json
    from nnunetv2.paths import nnUNet_preprocessed
    from nnunetv2.utilities.dataset_name_id_conversion import maybe_convert_to_dataset_name

    from .trainer import nnUNetTrainerAugmentd

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cpu":
        torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    folder = join(str(nnUNet_preprocessed), maybe_convert_to_dataset_name(args.dataset))
    plans = load_json(join(folder, args.plans + ".json"))
    plans["continue_training"] = False
    if args.tiny:
        shrink_network(plans, args.configuration)
    dataset_json = load_json(join(folder, "dataset.json"))
    fold = args.fold if args.fold == "all" else int(args.fold)
    results = []
    for cls in (nnUNetTrainerAugmentd, _fixed_batch_trainer()):
        print(f"[timing] {cls.__name__}: {args.warmup} warm-up + {args.iterations} iterations on {device} ...",
              file=sys.stderr, flush=True)
        results.append(time_trainer(cls, plans, args.configuration, fold, dataset_json, device, args.iterations,
                                    args.warmup))
    ours, compute = results
    print(f"\n{'trainer':<28} {'ms/iteration':>12} {'p50':>8} {'p99':>8}")
    for r in results:
        print(f"{r['trainer']:<28} {r['ms_per_iteration']:12.1f} {r['p50_ms']:8.1f} {r['p99_ms']:8.1f}")
    overhead = ours["ms_per_iteration"] - compute["ms_per_iteration"]
    print(f"data path adds {overhead:.1f} ms/iteration ({100 * overhead / compute['ms_per_iteration']:.1f} % of "
          f"compute); device {device}, delivery {os.environ.get('AUGMENTD_DELIVERY', 'auto')}")
    print(json.dumps({"device": str(device), "delivery": os.environ.get("AUGMENTD_DELIVERY", "auto"),
                      "results": results, "overhead_ms": overhead}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
