"""Short-schedule trainers of the ``quality`` stage (issue 26), found through ``nnUNet_extTrainer``.

``<Trainer>_e2eq`` is ``<Trainer>`` unchanged (augmentation, loss, network, optimiser, learning-rate schedule, final
validation) except for the schedule, read from the environment so that all four use the same one:

=================  ========================================================================================
E2E_Q_EPOCHS       ``num_epochs`` (nnU-Net: 1000); the poly learning-rate schedule runs over these epochs
E2E_Q_ITERS        ``num_iterations_per_epoch`` (nnU-Net: 250)
E2E_Q_VAL_ITERS    ``num_val_iterations_per_epoch`` (nnU-Net: 50; the per-epoch pseudo Dice)
E2E_Q_SEED         seeds python's, numpy's and torch's generators before the network is built (its initial
                   weights); the augmentd trainers' sessions take AUGMENTD_SEED (set per run by run_quality.py).
                   nnU-Net's own loader workers reseed themselves from the OS, and cuDNN is not deterministic:
                   two runs with one seed are replicates, not copies.
=================  ========================================================================================

Only ``checkpoint_final.pth`` is written (what the final validation used and ``nnUNetv2_predict -chk`` loads):
nnU-Net's ``checkpoint_best`` / ``checkpoint_latest`` would be rewritten nearly every epoch of a short schedule by
8 trainings at once — disk time, no effect on training.

Trainers: ``nnUNetTrainer_e2eq``, ``nnUNetTrainerDA5_e2eq`` (nnU-Net's loaders) and ``nnUNetTrainerAugmentd_e2eq``,
``nnUNetTrainerAugmentdDA5_e2eq`` (the same trainers with augmentd's loaders).
"""
import os
import random
from os.path import basename

import numpy as np
import torch
from nnunetv2.training.nnUNetTrainer.nnUNetTrainer import nnUNetTrainer
from nnunetv2.training.nnUNetTrainer.variants.data_augmentation.nnUNetTrainerDA5 import nnUNetTrainerDA5

from augmentd.nnunet.trainer import nnUNetTrainerAugmentd, nnUNetTrainerAugmentdDA5


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    try:
        return int(value) if value else default
    except ValueError:
        raise ValueError(f"{name}={value!r}: expected an integer") from None


def apply_schedule(trainer) -> None:
    trainer.num_epochs = _env_int("E2E_Q_EPOCHS", 20)
    trainer.num_iterations_per_epoch = _env_int("E2E_Q_ITERS", 50)
    trainer.num_val_iterations_per_epoch = _env_int("E2E_Q_VAL_ITERS", 10)
    if min(trainer.num_epochs, trainer.num_iterations_per_epoch, trainer.num_val_iterations_per_epoch) < 1:
        raise ValueError("E2E_Q_EPOCHS, E2E_Q_ITERS and E2E_Q_VAL_ITERS must be ≥ 1")
    seed = _env_int("E2E_Q_SEED", 0)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    trainer.print_to_log_file(f"e2e quality schedule: {trainer.num_epochs} epochs × "
                              f"{trainer.num_iterations_per_epoch} iterations (+{trainer.num_val_iterations_per_epoch}"
                              f" validation), seed {seed}")


class _FinalCheckpointOnly:
    def save_checkpoint(self, filename: str) -> None:
        if basename(filename) == "checkpoint_final.pth":
            super().save_checkpoint(filename)


class nnUNetTrainer_e2eq(_FinalCheckpointOnly, nnUNetTrainer):
    def __init__(self, plans: dict, configuration: str, fold: int, dataset_json: dict,
                 device: torch.device = torch.device("cuda")):
        super().__init__(plans, configuration, fold, dataset_json, device)
        apply_schedule(self)


class nnUNetTrainerDA5_e2eq(_FinalCheckpointOnly, nnUNetTrainerDA5):
    def __init__(self, plans: dict, configuration: str, fold: int, dataset_json: dict,
                 device: torch.device = torch.device("cuda")):
        super().__init__(plans, configuration, fold, dataset_json, device)
        apply_schedule(self)


class nnUNetTrainerAugmentd_e2eq(_FinalCheckpointOnly, nnUNetTrainerAugmentd):
    def __init__(self, plans: dict, configuration: str, fold: int, dataset_json: dict,
                 device: torch.device = torch.device("cuda")):
        super().__init__(plans, configuration, fold, dataset_json, device)
        apply_schedule(self)


class nnUNetTrainerAugmentdDA5_e2eq(_FinalCheckpointOnly, nnUNetTrainerAugmentdDA5):
    def __init__(self, plans: dict, configuration: str, fold: int, dataset_json: dict,
                 device: torch.device = torch.device("cuda")):
        super().__init__(plans, configuration, fold, dataset_json, device)
        apply_schedule(self)
