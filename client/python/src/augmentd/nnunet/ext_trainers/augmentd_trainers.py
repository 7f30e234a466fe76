"""nnU-Net external-trainer module of augmentd: point ``nnUNet_extTrainer`` at this folder (see
``python -m augmentd nnunet ext-dir``) and ``-tr nnUNetTrainerAugmentd`` resolves to the augmentd trainer
(``nnUNetTrainerAugmentdDA5``: nnUNetTrainerDA5's augmentation served by augmentd)."""
from augmentd.nnunet.trainer import *  # noqa: F401,F403 (nnUNetTrainerAugmentd, _smoke, DA5 where nnU-Net has it)
