"""nnU-Net's own variant trainers served by augmentd (augmentd.nnunet.dynamic) against their own loaders.

For each class, the run-time subclass (its translated pipeline: a preset where the translation equals it, else the
explicit list over the wire) and the stock class load the same real preprocessed dataset (tests/python/dataset,
16³ patches); batch statistics must agree as in test_trainer.py: shapes, dtypes, label values, foreground presence
per batch position (oversampling), foreground voxel fraction, image mean / std.
"""
from __future__ import annotations

import pytest

from nnunet_helpers import assert_stats_match, loader_stats

pytest.importorskip("nnunetv2")
from nnunetv2.utilities.find_objects import recursive_find_trainer_class_by_name  # noqa: E402

from augmentd.nnunet.dynamic import augmentd_trainer  # noqa: E402
from augmentd.v1 import pipeline_pb2  # noqa: E402

# class → how its training session is sent (fast-path preset, or the explicit translated list)
VARIANTS = {"nnUNetTrainerNoMirroring": pipeline_pb2.PRESET_NNUNET_DEFAULT,
            "nnUNetTrainer_DASegOrd0": pipeline_pb2.PRESET_UNSPECIFIED,
            "nnUNetTrainerDA5": pipeline_pb2.PRESET_NNUNET_DA5,
            "nnUNetTrainerDA5ord0": pipeline_pb2.PRESET_UNSPECIFIED,
            "nnUNetTrainerNoDA": pipeline_pb2.PRESET_NNUNET_VALIDATION}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variant_batches_match_its_own_loader(nnunet_env, augmentd_bin, monkeypatch, name):
    monkeypatch.delenv("AUGMENTD_ADDRESS", raising=False)
    monkeypatch.setenv("AUGMENTD_SEED", "4321")
    monkeypatch.setenv("nnUNet_n_proc_DA", "0")  # nnU-Net's own loader in this process (2-core CI machines)
    base = recursive_find_trainer_class_by_name(name)
    served = augmentd_trainer(base)
    sent = {}
    original = served._open_session

    def recording(self, make_config, *args, **kwargs):
        config, session = original(self, make_config, *args, **kwargs)
        sent[config.name.rsplit(" ", 1)[-1]] = config
        return config, session

    monkeypatch.setattr(served, "_open_session", recording)
    n_train, n_val = 40, 24
    ours = loader_stats(served, nnunet_env["preprocessed"], n_train, n_val)
    ref = loader_stats(base, nnunet_env["preprocessed"], n_train, n_val)
    assert sent["train"].pipeline.preset == VARIANTS[name]
    if VARIANTS[name] == pipeline_pb2.PRESET_UNSPECIFIED:  # the explicit list carried the crop the trainer cuts
        assert len(sent["train"].pipeline.transforms) > 10 and sent["train"].pipeline.trainer.initial_patch_size
    assert_stats_match(ours, ref, n_train, n_val)
