"""The nnU-Net client tells the server which batchgeneratorsv2 release the trainer's environment has (issue 23):
the presets then resample the segmentation as that release does (no server needed)."""
from __future__ import annotations

import importlib.metadata

import pytest

from augmentd.nnunet import config as cfg
from augmentd.nnunet.config import LoaderSettings, training_config, validation_config


def _settings() -> LoaderSettings:
    return LoaderSettings(dataset_folder="/data/pre/Dataset001_X/nnUNetPlans_3d_fullres", patch_size=[64, 96, 80],
                          initial_patch_size=[111, 150, 130], rotation=(-0.5, 0.5), do_dummy_2d_data_aug=False,
                          mirror_axes=[0, 1, 2], deep_supervision_scales=None, batch_size=2,
                          oversample_foreground_percent=0.33, probabilistic_oversampling=False,
                          num_input_channels=1, use_mask_for_norm=[False], regions=None, ignore_label=None,
                          train_ids=["a"], val_ids=["b"])


@pytest.mark.parametrize("installed,expected", [("0.3.6", "0.3.6"), ("0.3.7", "0.3.6"), ("1.0.0", "0.3.6"),
                                                ("0.3.5", "0.3.5"), ("0.3.4", "0.3.5"), ("0.3.10", "0.3.6")])
def test_installed_release_maps_to_server_semantics(monkeypatch, installed, expected):
    monkeypatch.setattr(importlib.metadata, "version", lambda name: installed)
    assert cfg.installed_bgv2_version() == expected


def test_missing_bgv2_means_todays_release(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)
    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert cfg.installed_bgv2_version() == "0.3.6"


def test_sessions_carry_the_installed_release():
    want = cfg.installed_bgv2_version()
    assert want == ("0.3.6" if tuple(map(int, importlib.metadata.version("batchgeneratorsv2").split(".")[:3]))
                    >= (0, 3, 6) else "0.3.5")
    for c in (training_config(_settings(), seed=1), validation_config(_settings(), seed=1)):
        assert c.pipeline.bgv2_version == want
