"""Making ``nnUNetv2_train ... -tr nnUNetTrainerAugmentd`` find the augmentd trainer.

nnU-Net looks trainers up by class name, first in its own package folder ``nnunetv2/training/nnUNetTrainer``
(recursively), then in the folders of the ``nnUNet_extTrainer`` environment variable. Three supported ways:

1. ``install_shim()`` (``python -m augmentd nnunet install``): writes a three-line module
   ``augmentd_trainers.py`` into nnU-Net's trainer folder that imports the classes from this package.
   ``uninstall_shim()`` removes it (only a file this function wrote, recognised by its marker line).
2. ``ext_trainer_dir()`` (``python -m augmentd nnunet ext-dir``): a folder to put into ``nnUNet_extTrainer``;
   nothing is written into site-packages.
3. ``augmentd-nnunet-train`` (``augmentd.nnunet.train``): ``nnUNetv2_train`` with (2) applied for that run.
"""
from __future__ import annotations

import os
from pathlib import Path

MARKER = "# written by `python -m augmentd nnunet install`; remove with `python -m augmentd nnunet uninstall`"
SHIM_NAME = "augmentd_trainers.py"
TRAINERS = ("nnUNetTrainerAugmentd", "nnUNetTrainerAugmentd_smoke", "nnUNetTrainerAugmentdDA5")


def shim_text() -> str:
    # A module nnU-Net imports while searching for *any* trainer: it must never fail (augmentd uninstalled,
    # broken environment), or every `nnUNetv2_train -tr X` would break with it.
    return (f"{MARKER}\n"
            "try:\n"
            "    from augmentd.nnunet.trainer import *  # noqa: F401,F403 (the trainers this nnU-Net supports)\n"
            "    from augmentd.nnunet.dynamic import __getattr__  # noqa: F401 (-tr <Trainer>__augmentd)\n"
            "except ImportError as _err:  # augmentd not importable here: the other trainers keep working\n"
            "    import warnings\n"
            "    warnings.warn(f'augmentd trainers unavailable: {_err}')\n")


def trainer_dir() -> Path:
    """nnU-Net's trainer package folder (``nnunetv2/training/nnUNetTrainer``) of the importable nnunetv2."""
    import nnunetv2

    return Path(nnunetv2.__path__[0]) / "training" / "nnUNetTrainer"


def shim_path() -> Path:
    return trainer_dir() / SHIM_NAME


def ext_trainer_dir() -> Path:
    """The folder to add to ``nnUNet_extTrainer`` (holds one module that imports the augmentd trainers)."""
    return Path(__file__).resolve().parent / "ext_trainers"


def shim_installed() -> bool:
    path = shim_path()
    return path.is_file() and path.read_text().startswith(MARKER)


def install_shim() -> str:
    """Writes the shim (idempotent). Returns a one-line description of what was done."""
    path = shim_path()
    text = shim_text()
    if path.exists():
        current = path.read_text()
        if not current.startswith(MARKER):
            raise FileExistsError(f"{path} exists and was not written by augmentd: not overwriting it")
        if current == text:
            return f"already installed: {path}"
    try:
        path.write_text(text)
    except PermissionError:
        raise PermissionError(f"cannot write {path}: run with permission to modify the nnunetv2 installation, or "
                              f"use `export nnUNet_extTrainer={ext_trainer_dir()}` instead") from None
    return f"installed {path} (nnUNetv2_train -tr {' / '.join(TRAINERS)} now finds the augmentd trainers)"


def uninstall_shim() -> str:
    """Removes the shim if this package wrote it. Returns a one-line description of what was done."""
    path = shim_path()
    if not path.exists():
        return f"not installed: {path} does not exist"
    if not path.read_text().startswith(MARKER):
        raise FileExistsError(f"{path} was not written by augmentd: not removing it")
    path.unlink()
    cache = path.parent / "__pycache__"
    for compiled in cache.glob(f"{path.stem}.*.pyc") if cache.is_dir() else ():
        compiled.unlink()
    return f"removed {path}"


def with_ext_trainer_dir(env: dict) -> dict:
    """``env`` with ``ext_trainer_dir()`` prepended to ``nnUNet_extTrainer``."""
    out = dict(env)
    parts = [p for p in out.get("nnUNet_extTrainer", "").split(os.pathsep) if p]
    here = str(ext_trainer_dir())
    out["nnUNet_extTrainer"] = os.pathsep.join([here] + [p for p in parts if p != here])
    return out
