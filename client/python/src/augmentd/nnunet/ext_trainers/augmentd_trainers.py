"""nnU-Net external-trainer module of augmentd: point ``nnUNet_extTrainer`` at this folder (see
``python -m augmentd nnunet ext-dir``) and ``-tr nnUNetTrainerAugmentd`` resolves to the augmentd trainer."""
from augmentd.nnunet.trainer import nnUNetTrainerAugmentd, nnUNetTrainerAugmentd_smoke  # noqa: F401
