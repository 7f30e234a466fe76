"""nnU-Net integration of augmentd: the drop-in trainer ``nnUNetTrainerAugmentd`` and its registration.

    python -m augmentd nnunet install          # once: lets `nnUNetv2_train ... -tr nnUNetTrainerAugmentd` find it
    nnUNetv2_train 1 3d_fullres 0 -tr nnUNetTrainerAugmentd

The trainer module imports nnunetv2 and torch; import it explicitly (``from augmentd.nnunet.trainer import
nnUNetTrainerAugmentd``). This package itself stays importable without them (the CLI's ``install`` needs only
nnunetv2's location).
"""
from .registration import ext_trainer_dir, install_shim, shim_installed, uninstall_shim  # noqa: F401
