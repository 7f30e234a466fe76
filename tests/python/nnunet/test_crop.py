"""augmentd.nnunet.crop (the patch trainer's crop and pad): the same cases, boxes and values as nnU-Net's own
``nnUNetDataLoader.generate_train_batch`` (transforms=None) after the same numpy seed, bit for bit — pure copies
and fills, so the verdict does not depend on the CPU. 3D crops larger than the case (padding on every side) and
inside it, 2D patches from 3D data, the cascade's previous-stage segmentation, and a loader subclass with its own
``generate_train_batch`` (run as it is)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

nnunetv2 = pytest.importorskip("nnunetv2")
from batchgenerators.utilities.file_and_folder_operations import join, load_json  # noqa: E402
from nnunetv2.training.dataloading.data_loader import nnUNetDataLoader  # noqa: E402
from nnunetv2.training.dataloading.nnunet_dataset import infer_dataset_class  # noqa: E402
from nnunetv2.utilities.plans_handling.plans_handler import PlansManager  # noqa: E402

from augmentd.nnunet.crop import BatchBuffers, LoaderSpec, ProcessBatches, crop_batch  # noqa: E402


def _dataset(preprocessed):
    pm = PlansManager(load_json(join(str(preprocessed), "nnUNetPlans.json")))
    folder = join(str(preprocessed), pm.get_configuration("3d_fullres").data_identifier)
    lm = pm.get_label_manager(load_json(join(str(preprocessed), "dataset.json")))
    return infer_dataset_class(folder)(folder), lm


class _WithPrevStage:
    """A dataset whose load_case also returns a previous-stage segmentation (the cascade's), derived from the
    case's own labels so that it differs from them."""

    def __init__(self, ds):
        self._ds = ds
        self.identifiers = ds.identifiers

    def load_case(self, key):
        data, seg, _, props = self._ds.load_case(key)
        return data, seg, (np.asarray(seg[0]) > 0).astype(np.int8), props

    def __getattr__(self, name):
        return getattr(self._ds, name)


def _check(loader, crop, seeds=range(4), seg_channels=1):
    b, c = loader.batch_size, 1
    image = torch.full((b, c, *crop), 7.0)  # garbage first: every voxel must be written
    seg = torch.full((b, seg_channels, *crop), 99, dtype=torch.int16)
    for s in seeds:
        np.random.seed(s)
        ref = loader.generate_train_batch()
        np.random.seed(s)
        keys = crop_batch(loader, image, seg)
        assert keys == list(ref["keys"]), s
        assert torch.equal(image, ref["data"]), s
        assert seg.dtype == ref["target"].dtype and torch.equal(seg, ref["target"]), s


@pytest.mark.parametrize("crop", [(40, 40, 40), (8, 12, 10), (1, 30, 30)])
def test_crop_batch_equals_nnunet_loader_3d(nnunet_env, crop):
    ds, lm = _dataset(nnunet_env["preprocessed"])
    loader = nnUNetDataLoader(ds, 2, crop, tuple(min(x, 8) for x in crop), lm, oversample_foreground_percent=0.5,
                              transforms=None)
    _check(loader, crop)


def test_crop_batch_equals_nnunet_loader_2d(nnunet_env):
    ds, lm = _dataset(nnunet_env["preprocessed"])
    loader = nnUNetDataLoader(ds, 3, (30, 26), (16, 16), lm, oversample_foreground_percent=0.33, transforms=None)
    assert loader.patch_size_was_2d
    _check(loader, (30, 26))


def test_crop_batch_equals_nnunet_loader_cascade(nnunet_env):
    ds, lm = _dataset(nnunet_env["preprocessed"])
    loader = nnUNetDataLoader(_WithPrevStage(ds), 2, (36, 36, 36), (16, 16, 16), lm,
                              oversample_foreground_percent=0.5, transforms=None)
    _check(loader, (36, 36, 36), seg_channels=2)


def test_custom_loader_runs_as_it_is(nnunet_env):
    ds, lm = _dataset(nnunet_env["preprocessed"])

    class Custom(nnUNetDataLoader):
        def generate_train_batch(self):
            batch = super().generate_train_batch()
            batch["data"] = batch["data"] * 2
            return batch

    loader = Custom(ds, 2, (20, 20, 20), (16, 16, 16), lm, transforms=None)
    _check(loader, (20, 20, 20))


def test_buffers_pool_and_stop():
    import threading

    bufs = BatchBuffers(2, 3, 1, (4, 5, 6), count=1, pin=False)
    pair = bufs.get()
    assert pair[0].shape == (2, 3, 4, 5, 6) and pair[0].dtype == torch.float32
    assert pair[1].shape == (2, 1, 4, 5, 6) and pair[1].dtype == torch.int16
    stop = threading.Event()
    stop.set()
    assert bufs.get(stop) is None  # empty pool, stop set: returns instead of blocking
    bufs.put(pair)
    assert bufs.get(stop) is pair


def test_process_workers_fill_shared_buffers_like_crop_batch(nnunet_env):
    """One spawned worker seeded with s: its batches are the parent's crop_batch after np.random.seed(s), read out
    of the shared buffers; recycled buffers are refilled; close() ends the worker."""
    ds, lm = _dataset(nnunet_env["preprocessed"])
    kwargs = dict(data=ds, batch_size=2, patch_size=(30, 30, 30), final_patch_size=(16, 16, 16), label_manager=lm,
                  oversample_foreground_percent=0.5, transforms=None)
    spec = LoaderSpec(nnUNetDataLoader, **kwargs)
    ref_loader = spec.build()
    np.random.seed(11)
    want = []
    for _ in range(4):
        image = torch.empty((2, 1, 30, 30, 30))
        seg = torch.empty((2, 1, 30, 30, 30), dtype=torch.int16)
        want.append((crop_batch(ref_loader, image, seg), image, seg))
    batches = ProcessBatches(spec, workers=1, depth=1, seed=11, name="test", shapes=(2, 1, 1, (30, 30, 30)), pin=False)
    try:
        for keys, image, seg in want:  # 3 buffers: the 4th batch needs a recycled one
            got_image, got_seg, got_keys = next(batches)
            assert got_keys == keys and torch.equal(got_image, image) and torch.equal(got_seg, seg)
            batches.recycle((got_image, got_seg))
    finally:
        batches.close()
    assert all(not p.is_alive() for p in batches._procs)


def test_process_worker_failure_is_raised(nnunet_env):
    ds, lm = _dataset(nnunet_env["preprocessed"])
    spec = LoaderSpec(nnUNetDataLoader, data=ds, batch_size=2, patch_size=(30, 30, 30),
                      final_patch_size=(16, 16, 16), label_manager=lm, transforms=None)
    # buffers for a batch of 1, the loader's batch is 2: the worker's second sample fails, next() says why
    batches = ProcessBatches(spec, workers=1, depth=1, seed=0, name="test", shapes=(1, 1, 1, (30, 30, 30)), pin=False)
    try:
        with pytest.raises(RuntimeError, match="failed in a worker"):
            next(batches)
    finally:
        batches.close()
