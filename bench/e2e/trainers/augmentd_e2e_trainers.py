"""Trainers of the end-to-end benchmark that nnU-Net finds through ``nnUNet_extTrainer`` (train_driver.py sets it).

``nnUNetTrainerAugmentdDA5``: ``nnUNetTrainerAugmentd`` configured like ``nnUNetTrainerDA5`` (its rotation, mirror
axes and initial patch size) with the server-side ``nnunet_da5`` preset — DA5's augmentation served by augmentd.
If the augmentd package ships its own DA5 trainer, that one is used instead.
"""
from augmentd.nnunet import trainer as _augmentd_trainer
from augmentd.v1 import pipeline_pb2
from nnunetv2.training.nnUNetTrainer.variants.data_augmentation.nnUNetTrainerDA5 import nnUNetTrainerDA5

if hasattr(_augmentd_trainer, "nnUNetTrainerAugmentdDA5"):
    nnUNetTrainerAugmentdDA5 = _augmentd_trainer.nnUNetTrainerAugmentdDA5
else:
    class nnUNetTrainerAugmentdDA5(_augmentd_trainer.nnUNetTrainerAugmentd):
        """nnUNetTrainerAugmentd with DA5's configuration and the nnunet_da5 preset on the training session."""

        configure_rotation_dummyDA_mirroring_and_inital_patch_size = \
            nnUNetTrainerDA5.configure_rotation_dummyDA_mirroring_and_inital_patch_size
        augmentd_preset = pipeline_pb2.PRESET_NNUNET_DA5  # honoured by the trainer where it supports the attribute

        def get_dataloaders(self):
            if "augmentd_preset" in vars(_augmentd_trainer.nnUNetTrainerAugmentd):
                return super().get_dataloaders()
            # The trainer builds its training SessionConfig with training_config(); swap the preset in for this
            # call only (the augmentd trainer has no preset hook yet).
            original = _augmentd_trainer.training_config

            def da5_config(*args, **kwargs):
                config = original(*args, **kwargs)
                config.pipeline.preset = pipeline_pb2.PRESET_NNUNET_DA5
                return config

            _augmentd_trainer.training_config = da5_config
            try:
                return super().get_dataloaders()
            finally:
                _augmentd_trainer.training_config = original
