"""How nnU-Net finds the augmentd trainers: the installed shim, nnUNet_extTrainer, augmentd-nnunet-train.

The shim is installed into a temporary copy of the trainer folder (never into the shared environment's nnunetv2)
and then resolved with nnU-Net's own class search.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("nnunetv2")
from nnunetv2.utilities.find_class_by_name import recursive_find_python_class  # noqa: E402
from nnunetv2.utilities.find_objects import recursive_find_trainer_class_by_name  # noqa: E402

from augmentd.nnunet import registration  # noqa: E402
from augmentd.nnunet.trainer import nnUNetTrainerAugmentd, nnUNetTrainerAugmentd_smoke, \
    nnUNetTrainerAugmentdDA5  # noqa: E402
from augmentd.v1 import pipeline_pb2  # noqa: E402
from augmentd_server import client_env  # noqa: E402


@pytest.fixture
def trainer_dir(tmp_path, monkeypatch):
    folder = tmp_path / "nnUNetTrainer"
    folder.mkdir()
    monkeypatch.setattr(registration, "trainer_dir", lambda: folder)
    return folder


def test_install_is_idempotent_and_uninstall_removes(trainer_dir):
    shim = trainer_dir / registration.SHIM_NAME
    assert registration.install_shim().startswith("installed ")
    assert shim.is_file() and registration.shim_installed()
    assert registration.install_shim().startswith("already installed")
    found = recursive_find_python_class(str(trainer_dir), "nnUNetTrainerAugmentd", None, str(trainer_dir),
                                        cleanup_imports_from_base_folder=True)
    assert found is nnUNetTrainerAugmentd
    da5 = recursive_find_python_class(str(trainer_dir), "nnUNetTrainerAugmentdDA5", None, str(trainer_dir),
                                      cleanup_imports_from_base_folder=True)
    assert da5 is nnUNetTrainerAugmentdDA5 and da5.augmentd_preset == pipeline_pb2.PRESET_NNUNET_DA5
    assert registration.uninstall_shim() == f"removed {shim}"
    assert not shim.exists() and not registration.shim_installed()
    assert registration.uninstall_shim().startswith("not installed")


def test_foreign_file_is_never_overwritten_or_removed(trainer_dir):
    shim = trainer_dir / registration.SHIM_NAME
    shim.write_text("# somebody else's module\n")
    with pytest.raises(FileExistsError, match="not written by augmentd"):
        registration.install_shim()
    with pytest.raises(FileExistsError, match="not written by augmentd"):
        registration.uninstall_shim()
    assert shim.read_text() == "# somebody else's module\n"


def test_shim_without_augmentd_keeps_other_lookups_working(trainer_dir, tmp_path):
    registration.install_shim()
    # A Python that cannot import augmentd imports the shim with a warning instead of an error.
    code = (f"import sys, warnings; sys.path.insert(0, {str(trainer_dir)!r}); warnings.simplefilter('error'); "
            f"import importlib\ntry:\n    importlib.import_module('augmentd_trainers')\nexcept UserWarning as w:\n"
            f"    print('warned:', w)")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert "warned: augmentd trainers unavailable" in out.stdout, out.stdout + out.stderr


def test_ext_trainer_dir_is_found_by_nnunet(monkeypatch):
    monkeypatch.setenv("nnUNet_extTrainer", str(registration.ext_trainer_dir()))
    assert recursive_find_trainer_class_by_name("nnUNetTrainerAugmentd") is nnUNetTrainerAugmentd
    assert recursive_find_trainer_class_by_name("nnUNetTrainerAugmentd_smoke") is nnUNetTrainerAugmentd_smoke


def test_train_entry_point_resolves_the_trainer(monkeypatch):
    import nnunetv2.run.run_training as rt

    from augmentd.nnunet import train

    monkeypatch.delenv("nnUNet_extTrainer", raising=False)
    seen = {}

    def fake_run_training(dataset, configuration, fold, trainer_class_name, *args, **kwargs):
        seen.update(dataset=dataset, configuration=configuration, fold=fold,
                    cls=recursive_find_trainer_class_by_name(trainer_class_name))

    monkeypatch.setattr(rt, "run_training", fake_run_training)
    monkeypatch.setattr(sys, "argv", ["x", "987", "3d_fullres", "0", "-tr", "nnUNetTrainerAugmentd", "-device", "cpu"])
    train.main()
    assert seen == {"dataset": "987", "configuration": "3d_fullres", "fold": "0", "cls": nnUNetTrainerAugmentd}


def test_train_entry_point_serves_any_trainer_class(monkeypatch):
    """``-tr nnUNetTrainerNoMirroring`` runs that class (its name, its methods) with augmentd's loaders."""
    import nnunetv2.run.run_training as rt
    from nnunetv2.training.nnUNetTrainer.variants.data_augmentation.nnUNetTrainerNoMirroring import \
        nnUNetTrainerNoMirroring

    from augmentd.nnunet import train

    monkeypatch.delenv("nnUNet_extTrainer", raising=False)
    seen = {}

    def fake_run_training(dataset, configuration, fold, trainer_class_name, *args, **kwargs):
        seen.update(name=trainer_class_name, cls=recursive_find_trainer_class_by_name(trainer_class_name))

    monkeypatch.setattr(rt, "run_training", fake_run_training)
    monkeypatch.setattr(rt.torch, "set_num_interop_threads", lambda n: None)  # once per process only
    monkeypatch.setattr(sys, "argv", ["x", "987", "3d_fullres", "0", "-tr", "nnUNetTrainerNoMirroring", "-device",
                                      "cpu"])
    train.main()
    cls = seen["cls"]
    assert seen["name"] == "nnUNetTrainerNoMirroring__augmentd"
    assert cls.__name__ == "nnUNetTrainerNoMirroring" and cls.augmentd_base is nnUNetTrainerNoMirroring
    assert issubclass(cls, nnUNetTrainerAugmentd) and issubclass(cls, nnUNetTrainerNoMirroring)
    # everything but the loaders is the class's own
    assert cls.configure_rotation_dummyDA_mirroring_and_inital_patch_size is \
        nnUNetTrainerNoMirroring.configure_rotation_dummyDA_mirroring_and_inital_patch_size
    assert cls.get_dataloaders is nnUNetTrainerAugmentd.get_dataloaders
    monkeypatch.setattr(sys, "argv", ["x", "987", "3d_fullres", "0", "-device", "cpu"])  # no -tr: nnUNetTrainer
    train.main()
    assert seen["name"] == "nnUNetTrainer__augmentd" and seen["cls"].__name__ == "nnUNetTrainer"


def test_served_argv_keeps_augmentd_names():
    from augmentd.nnunet.train import served_argv

    assert served_argv(["1", "2d", "0", "-tr", "nnUNetTrainerAugmentd"])[-1] == "nnUNetTrainerAugmentd"
    assert served_argv(["1", "2d", "0", "-tr", "X__augmentd", "-p", "P"]) == ["1", "2d", "0", "-tr", "X__augmentd",
                                                                           "-p", "P"]
    assert served_argv(["1", "2d", "0", "-tr=nnUNetTrainer_5epochs"])[-1] == "-tr=nnUNetTrainer_5epochs__augmentd"


def test_dynamic_names_resolve_through_ext_dir_and_shim(monkeypatch, trainer_dir):
    from nnunetv2.training.nnUNetTrainer.variants.training_length.nnUNetTrainer_Xepochs import nnUNetTrainer_5epochs

    from augmentd.nnunet.dynamic import NotServable, augmentd_trainer

    monkeypatch.setenv("nnUNet_extTrainer", str(registration.ext_trainer_dir()))
    cls = recursive_find_trainer_class_by_name("nnUNetTrainer_5epochs__augmentd")
    assert cls is augmentd_trainer(nnUNetTrainer_5epochs) and cls.__name__ == "nnUNetTrainer_5epochs"
    registration.install_shim()
    found = recursive_find_python_class(str(trainer_dir), "nnUNetTrainer_5epochs__augmentd", None, str(trainer_dir),
                                        cleanup_imports_from_base_folder=True)
    assert found is cls
    # a trainer that builds its own loaders (or none) is refused with the reason
    from nnunetv2.training.nnUNetTrainer.variants.benchmarking.nnUNetTrainerBenchmark_5epochs_noDataLoading import \
        nnUNetTrainerBenchmark_5epochs_noDataLoading
    with pytest.raises(NotServable, match="get_dataloaders is overridden"):
        augmentd_trainer(nnUNetTrainerBenchmark_5epochs_noDataLoading)


def test_cli_nnunet_status_and_ext_dir():
    out = subprocess.run([sys.executable, "-m", "augmentd", "nnunet", "ext-dir"], capture_output=True, text=True,
                         env=client_env(), check=True)
    assert out.stdout.strip() == str(registration.ext_trainer_dir())
    out = subprocess.run([sys.executable, "-m", "augmentd", "nnunet", "status"], capture_output=True, text=True,
                         env=client_env(), check=True)
    assert "augmentd_trainers.py" in out.stdout and "nnUNet_extTrainer" in out.stdout
