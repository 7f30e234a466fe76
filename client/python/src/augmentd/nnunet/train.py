"""``augmentd-nnunet-train``: ``nnUNetv2_train`` with the data loaders of any trainer class served by augmentd.

    augmentd-nnunet-train DATASET CONFIGURATION FOLD [-tr TRAINER] [--mps] [any nnUNetv2_train option]

``-tr TRAINER`` (default nnUNetTrainer) runs that very class — nnU-Net's variants (nnUNetTrainerNoMirroring,
nnUNetTrainerDA5, nnUNetTrainer_250epochs, ...) or your own under nnUNet_extTrainer — with only its two data
loaders replaced (augmentd.nnunet.dynamic: its own pipeline, translated). The augmentd classes
(nnUNetTrainerAugmentd, ...) and ``<Trainer>__augmentd`` names are used as given. Check a class first with
``python -m augmentd nnunet check -tr TRAINER``.

``--mps`` runs the training (its DDP workers and the local augmentd it starts) under a private CUDA MPS daemon
(``augmentd.mps``): the trainer's and augmentd's kernels then share the GPU instead of time-slicing two contexts.
It is started before any CUDA call and quit at the end; ``$AUGMENTD_MPS_DIR`` names its pipe / log directory.

Prepends this package's external-trainer folder to ``nnUNet_extTrainer`` (also seen by DDP worker processes, which
resolve ``<Trainer>__augmentd`` there again) and runs nnU-Net's own ``run_training_entry``.
"""
import os
import sys
from typing import List, Tuple

from .dynamic import SUFFIX
from .registration import TRAINERS, with_ext_trainer_dir


def served_argv(argv: List[str]) -> List[str]:
    """The nnUNetv2_train command line with ``-tr X`` (default nnUNetTrainer) naming ``X__augmentd``."""
    out = list(argv)
    for i, a in enumerate(out):
        if a == "-tr" and i + 1 < len(out):
            name = out[i + 1]
            if not (name.endswith(SUFFIX) or name in TRAINERS):
                out[i + 1] = name + SUFFIX
            return out
        if a.startswith("-tr="):
            name = a[len("-tr="):]
            out[i] = a if name.endswith(SUFFIX) or name in TRAINERS else a + SUFFIX
            return out
    if any(a in ("-h", "--help") for a in out):
        return out
    return out + ["-tr", "nnUNetTrainer" + SUFFIX]


def split_mps(argv: List[str]) -> Tuple[List[str], bool]:
    """(argv without ``--mps``, whether it was given)."""
    rest = [a for a in argv if a != "--mps"]
    return rest, len(rest) != len(argv)


def main() -> None:
    os.environ.update(with_ext_trainer_dir(os.environ))
    argv, mps = split_mps(sys.argv[1:])
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)  # this wrapper's own options; nnU-Net's follow
    sys.argv = ["augmentd-nnunet-train"] + served_argv(argv)
    if mps:
        from augmentd.mps import MpsDaemon, MpsError

        try:
            daemon = MpsDaemon.for_training().start()  # before nnU-Net (and torch) touch CUDA
        except MpsError as err:
            sys.exit(str(err))
        print(f"augmentd-nnunet-train: CUDA MPS daemon in {daemon.root}"
              f"{'' if daemon.started else ' (already running there)'}", file=sys.stderr)
        try:
            _run()
        finally:
            daemon.stop()
    else:
        _run()


def _run() -> None:
    from nnunetv2.run.run_training import run_training_entry

    run_training_entry()


if __name__ == "__main__":
    main()
