"""``augmentd-nnunet-train``: ``nnUNetv2_train`` that finds the augmentd trainers without installing anything.

    augmentd-nnunet-train DATASET 3d_fullres 0 -tr nnUNetTrainerAugmentd [any nnUNetv2_train option]

Prepends this package's external-trainer folder to ``nnUNet_extTrainer`` (also seen by DDP worker processes)
and runs nnU-Net's own ``run_training_entry`` with the same command line.
"""
import os
import sys

from .registration import with_ext_trainer_dir


def main() -> None:
    os.environ.update(with_ext_trainer_dir(os.environ))
    from nnunetv2.run.run_training import run_training_entry

    sys.argv[0] = "augmentd-nnunet-train"
    run_training_entry()


if __name__ == "__main__":
    main()
