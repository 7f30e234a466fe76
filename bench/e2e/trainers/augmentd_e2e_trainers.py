"""Trainers of the end-to-end benchmark that nnU-Net finds through ``nnUNet_extTrainer`` (train_driver.py sets it).

``nnUNetTrainerAugmentdDA5`` (shipped by the augmentd package): ``nnUNetTrainerAugmentd`` configured like
``nnUNetTrainerDA5`` with the server-side ``nnunet_da5`` preset — DA5's augmentation served by augmentd.
"""
from augmentd.nnunet.trainer import nnUNetTrainerAugmentdDA5  # noqa: F401
from augmentd.nnunet.patch_trainer import nnUNetTrainerAugmentdPatch  # noqa: F401,E402  (stage patch, issue 22)
try:
    from augmentd.nnunet.patch_trainer import nnUNetTrainerAugmentdPatchDA5  # noqa: F401  (stage patch_da5)
except ImportError:  # pragma: no cover - nnU-Net without nnUNetTrainerDA5
    pass
