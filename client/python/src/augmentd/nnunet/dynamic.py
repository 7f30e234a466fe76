"""Any nnU-Net trainer class with its two data loaders served by augmentd, made at run time.

    cls = augmentd_trainer(nnUNetTrainerNoMirroring)   # nnUNetTrainerNoMirroring, loaders from augmentd
    augmentd-nnunet-train 1 3d_fullres 0 -tr nnUNetTrainerNoMirroring

``augmentd_trainer(base)`` is ``class base(nnUNetTrainerAugmentd, base)``: nnUNetTrainerAugmentd contributes only
``get_dataloaders`` (which translates the class's own ``get_training_transforms`` / ``get_validation_transforms``)
and the session lifetime; loss, optimizer, lr schedule, epochs, network, deep supervision and inference resolve to
``base``'s own methods. The class keeps ``base``'s name, so its output folder, checkpoints (``trainer_name``) and
``nnUNetv2_predict -tr <base>`` are the stock trainer's.

nnU-Net finds trainers by class name. The name ``<base>__augmentd`` (``SUFFIX``) resolves, in every module that
imports this module's ``__getattr__`` (the external-trainer module and the installed shim), to
``augmentd_trainer(<base>)`` — also in DDP worker processes, which look the trainer up again by name.
"""
from __future__ import annotations

import functools

SUFFIX = "__augmentd"


class NotServable(ValueError):
    """A trainer class whose data loading augmentd cannot take over (the message says why)."""


def _defined_by(cls, name: str):
    for c in cls.__mro__:
        if name in vars(c):
            return c
    return None


@functools.lru_cache(maxsize=None)
def augmentd_trainer(base: type) -> type:
    """``base`` (an nnUNetTrainer subclass) with its data loaders from augmentd. Raises NotServable."""
    from nnunetv2.training.nnUNetTrainer.nnUNetTrainer import nnUNetTrainer

    from .trainer import nnUNetTrainerAugmentd

    if not (isinstance(base, type) and issubclass(base, nnUNetTrainer)):
        raise NotServable(f"{base!r} is not an nnUNetTrainer class")
    if issubclass(base, nnUNetTrainerAugmentd):
        return base
    owner = _defined_by(base, "get_dataloaders")
    if owner is not nnUNetTrainer:
        raise NotServable(f"{base.__name__}: get_dataloaders is overridden by {owner.__module__}.{owner.__name__}; "
                          f"augmentd replaces nnUNetTrainer's two data loaders and cannot take over a trainer that "
                          f"builds (or skips) its own")
    cls = type(base.__name__, (nnUNetTrainerAugmentd, base), {
        "__module__": base.__module__, "__qualname__": base.__qualname__,
        "__doc__": f"{base.__name__} with its two data loaders served by augmentd (augmentd.nnunet.dynamic).",
        "augmentd_base": base})
    return cls


def find_trainer_class(name: str) -> type:
    """The trainer class nnU-Net would run for ``-tr name`` (its own folder, then nnUNet_extTrainer)."""
    from nnunetv2.utilities.find_objects import recursive_find_trainer_class_by_name

    return recursive_find_trainer_class_by_name(name)


def __getattr__(name: str):
    """Module attribute hook (PEP 562) for modules nnU-Net searches: ``<base>__augmentd`` → augmentd_trainer."""
    if name.endswith(SUFFIX) and len(name) > len(SUFFIX) and not name.startswith("__"):
        return augmentd_trainer(find_trainer_class(name[:-len(SUFFIX)]))
    raise AttributeError(name)
