"""nnU-Net external-trainer module of augmentd: point ``nnUNet_extTrainer`` at this folder (see
``python -m augmentd nnunet ext-dir``) and ``-tr nnUNetTrainerAugmentd`` resolves to the augmentd trainer
(``nnUNetTrainerAugmentdDA5``: nnUNetTrainerDA5's augmentation served by augmentd), and ``-tr <Trainer>__augmentd``
to any trainer class with its data loaders served by augmentd (augmentd.nnunet.dynamic)."""
from augmentd.nnunet.dynamic import __getattr__  # noqa: F401 (<Trainer>__augmentd, resolved on lookup)
from augmentd.nnunet.trainer import *  # noqa: F401,F403 (nnUNetTrainerAugmentd, _smoke, DA5 where nnU-Net has it)
