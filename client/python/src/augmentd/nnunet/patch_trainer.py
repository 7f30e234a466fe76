"""``nnUNetTrainerAugmentdPatch``: nnU-Net's own data loader and sampler, augmentd's patch mode for the transforms.

Where ``nnUNetTrainerAugmentd`` lets the server sample and read the dataset (dataset mode), this trainer keeps
nnU-Net's ``nnUNetDataLoader`` — its case choice, foreground oversampling, bounding boxes, crop and pad, and any
custom loader or dataset class a subclass brings — and runs it with ``transforms=None`` (crop and pad only, none of
its CPU transforms) in a few threads instead of processes. Each batch of enlarged patches goes to augmentd's patch
mode on the trainer's GPU through ``augmentd.PatchAugmenter``: written into the session's server-owned CUDA input
slot, augmented with the server's ``nnunet_default`` pipeline (``nnunet_validation`` for the validation loader)
configured exactly like the trainer, and handed back through a CUDA IPC output slot as CUDA tensors — so
``train_step``'s ``.to(device)`` is a no-op. The next batch is submitted before the current one is returned, so it
is augmented while the trainer computes (a submitter thread hands batches over ahead of ``next()``).

Server, device and seed selection are those of ``nnUNetTrainerAugmentd`` (same environment variables; a local
server is started when none answers). Also:

==========================  ==========================================================================================
AUGMENTD_PATCH_THREADS      threads running nnU-Net's loader (crop and pad) per loader (default 4; validation: half)
AUGMENTD_PATCH_QUEUE        cropped batches queued ahead per loader (default 4)
==========================  ==========================================================================================
"""
from __future__ import annotations

import os
import queue
import random
import threading
from typing import Optional

import numpy as np
import torch
from nnunetv2.training.dataloading.data_loader import nnUNetDataLoader

from augmentd.local_server import connect_or_start
from augmentd.patch import PatchAugmenter
from augmentd.v1 import pipeline_pb2, session_pb2

from .config import settings_from_trainer, training_config, validation_config
from .trainer import _device_spec, _env_int, nnUNetTrainerAugmentd

_STOP = object()


class ThreadedBatches:
    """nnU-Net's data loader (``transforms=None``) in ``threads`` threads, each with its own loader object; batches
    go into a queue of ``depth``. ``next()`` returns ``{'data', 'target', 'keys'}`` host tensors (float32 image,
    int16 segmentation) of the enlarged patch size."""

    def __init__(self, make_loader, threads: int, depth: int, seed: int, name: str):
        self.name = name
        self._queue: "queue.Queue" = queue.Queue(maxsize=max(1, depth))
        self._stop = threading.Event()
        self._threads = []
        # nnU-Net's sampler draws from numpy's global generator, which the threads share (the GIL serialises draws).
        np.random.seed(seed % (2 ** 32))
        for k in range(max(1, threads)):
            loader = make_loader()
            t = threading.Thread(target=self._run, args=(loader,), name=f"augmentd-{name}-crop-{k}", daemon=True)
            self._threads.append(t)
            t.start()

    def _run(self, loader) -> None:
        try:
            while not self._stop.is_set():
                batch = loader.generate_train_batch()
                while not self._stop.is_set():
                    try:
                        self._queue.put(batch, timeout=0.2)
                        break
                    except queue.Full:
                        continue
        except BaseException as err:  # noqa: BLE001 (raised by next())
            self._queue.put(err)

    def __next__(self) -> dict:
        return self.get()

    def get(self, timeout: Optional[float] = None) -> Optional[dict]:
        """The next cropped batch; None when none came within ``timeout`` seconds (None: wait)."""
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(item, BaseException):
            raise RuntimeError(f"augmentd {self.name}: nnU-Net's data loader failed: {item}") from item
        return item

    def close(self) -> None:
        self._stop.set()
        while True:  # unblock producers waiting on a full queue
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        for t in self._threads:
            t.join(timeout=5)


class AugmentdPatchLoader:
    """Cropped batches from ``batches`` augmented by ``augmenter`` on the server: a submitter thread hands up to
    ``augmenter.depth`` batches over ahead of the trainer (the copy into the input slot — host to device on the
    augmenter's own stream — and the augmentation run while the trainer computes, not in its ``next()``).
    ``next()`` returns ``{'data': CUDA (B, C, *patch), 'target': [CUDA tensors per deep-supervision scale] (or one
    tensor), 'keys': [...]}`` — views of the session's output slot, valid until the next ``next()`` (as nnU-Net's
    training loop uses a batch)."""

    def __init__(self, batches: ThreadedBatches, augmenter: PatchAugmenter, deep_supervision: bool, name: str):
        self.name = name
        self._batches = batches
        self._aug = augmenter
        self._deep_supervision = deep_supervision
        self.session = augmenter.session
        self.batches_taken = 0
        self._stop = threading.Event()
        self._room = threading.Semaphore(augmenter.depth)  # submitted and not yet taken: submit() never waits
        self._submitted: "queue.Queue" = queue.Queue()       # (future, keys) in submit order, or an exception
        self._submitter = threading.Thread(target=self._submit_loop, name=f"augmentd-{name}-submit", daemon=True)
        self._submitter.start()

    def _submit_loop(self) -> None:
        try:
            while not self._stop.is_set():
                if not self._room.acquire(timeout=0.2):
                    continue
                batch = None
                while batch is None and not self._stop.is_set():
                    batch = self._batches.get(timeout=0.2)
                if batch is None:
                    return
                self._submitted.put((self._aug.submit(batch["data"], batch["target"]), batch["keys"]))
        except BaseException as err:  # noqa: BLE001 (raised by next())
            if not self._stop.is_set():
                self._submitted.put(err)

    def __iter__(self) -> "AugmentdPatchLoader":
        return self

    def __next__(self) -> dict:
        item = self._submitted.get()
        if isinstance(item, BaseException):
            self._submitted.put(item)  # every later next() raises it too
            raise item
        future, keys = item
        try:
            image, targets = self._aug.result(future)
        finally:
            self._room.release()
        self.batches_taken += 1
        return {"data": image, "target": targets if self._deep_supervision else targets[0], "keys": keys}

    def close(self) -> Optional[object]:
        """Stops the submitter and loader threads and closes the session; returns its final SessionStats (None if
        closed)."""
        self._stop.set()
        self._submitter.join(timeout=10)
        self._batches.close()
        return self._aug.close()


def patch_config(dataset_config: session_pb2.SessionConfig, input_patch_size, channels: int) -> session_pb2.SessionConfig:
    """The patch-mode twin of a dataset-mode SessionConfig (same pipeline, batch size, seed, device, name)."""
    cfg = session_pb2.SessionConfig()
    cfg.CopyFrom(dataset_config)
    cfg.ClearField("dataset")
    cfg.patch.CopyFrom(session_pb2.PatchModeConfig(input_patch_size=list(input_patch_size),
                                                   num_image_channels=channels))
    cfg.delivery = 0  # PatchAugmenter picks: CUDA IPC on a GPU, host shm on the CPU
    cfg.prefetch_depth = 0
    return cfg


class nnUNetTrainerAugmentdPatch(nnUNetTrainerAugmentd):
    """nnUNetTrainer with nnU-Net's own loader (crop and pad, in threads) and augmentd patch mode on its GPU."""

    def get_dataloaders(self):
        settings = settings_from_trainer(self)
        try:
            return self._open_patch_loaders(settings)
        except BaseException:
            self._augmentd_close()
            raise

    def _open_patch_loaders(self, s):
        device = os.environ.get("AUGMENTD_DEVICE") or _device_spec(self.device)
        address = os.environ.get("AUGMENTD_ADDRESS") or None
        self._augmentd_client, self._augmentd_server = connect_or_start(
            address, device=device, dataset_roots=[os.path.dirname(s.dataset_folder)],
            start_local=os.environ.get("AUGMENTD_LOCAL_SERVER", "auto"),
            connect_timeout=float(os.environ.get("AUGMENTD_CONNECT_TIMEOUT") or 3.0),
            extra_args=self._local_server_args(device))
        seed_env = os.environ.get("AUGMENTD_SEED", "")
        base = _env_int("AUGMENTD_SEED", 0) if seed_env else random.SystemRandom().randrange(2 ** 62)
        threads = _env_int("AUGMENTD_PATCH_THREADS", 4)
        depth = _env_int("AUGMENTD_PATCH_QUEUE", 4)
        tag = f"{self.plans_manager.dataset_name} {self.configuration_name} fold {self.fold}"
        ds = s.deep_supervision_scales is not None
        dataset_tr, dataset_val = self.get_tr_and_val_datasets()
        for make_config, extra, dataset, crop, seed, n_threads, label in (
                (training_config, {"preset": self.augmentd_preset}, dataset_tr, s.initial_patch_size,
                 base + 2 * self.local_rank, threads, "train"),
                (validation_config, {}, dataset_val, s.patch_size, base + 2 * self.local_rank + 1,
                 max(1, threads // 2), "val")):
            config = patch_config(make_config(s, seed, "auto", device, f"{tag} {label} (patch mode)", 0, **extra),
                                  crop, s.num_input_channels)
            aug = PatchAugmenter(self._augmentd_client, config, depth=2, hold=1)
            if aug.patch_size[-len(crop):] != list(crop):
                aug.close()
                raise RuntimeError(f"initial_patch_size: the server derives {aug.patch_size}, nnU-Net crops {crop}")

            def make_loader(dataset=dataset, crop=crop):
                return nnUNetDataLoader(dataset, self.batch_size, crop, s.patch_size, self.label_manager,
                                        oversample_foreground_percent=self.oversample_foreground_percent,
                                        sampling_probabilities=None, pad_sides=None, transforms=None,
                                        probabilistic_oversampling=self.probabilistic_oversampling)

            batches = ThreadedBatches(make_loader, n_threads, depth, seed, f"{label} loader")
            loader = AugmentdPatchLoader(batches, aug, ds, config.name)
            self._augmentd_loaders.append(loader)
            self.print_to_log_file(
                f"augmentd: {config.name} session {aug.session.session_id} on {aug.device}: input slots "
                f"{aug.input_slots}, delivery {aug.session.response.delivery}, batch {s.batch_size}, crop {crop}, "
                f"{n_threads} loader threads")
        train, val = self._augmentd_loaders
        next(train)  # like nnUNetTrainer.get_dataloaders: a broken setup fails here
        next(val)
        return train, val


class nnUNetTrainerAugmentdPatch_smoke(nnUNetTrainerAugmentdPatch):
    """2 epochs × 3 iterations (2 validation iterations): checks a setup end to end in a minute."""

    def __init__(self, plans: dict, configuration: str, fold: int, dataset_json: dict,
                 device: torch.device = torch.device("cuda")):
        super().__init__(plans, configuration, fold, dataset_json, device)
        self.num_epochs = 2
        self.num_iterations_per_epoch = 3
        self.num_val_iterations_per_epoch = 2


__all__ = ["nnUNetTrainerAugmentdPatch", "nnUNetTrainerAugmentdPatch_smoke"]

try:  # nnUNetTrainerDA5 ships with nnU-Net >= 2.2
    from nnunetv2.training.nnUNetTrainer.variants.data_augmentation.nnUNetTrainerDA5 import nnUNetTrainerDA5
except ImportError:  # pragma: no cover - older nnU-Net
    nnUNetTrainerDA5 = None

if nnUNetTrainerDA5 is not None:
    class nnUNetTrainerAugmentdPatchDA5(nnUNetTrainerAugmentdPatch):
        """nnUNetTrainerDA5's augmentation (its rotation, mirror axes and initial patch size; the server's nnunet_da5
        preset) on nnU-Net's own loader, through patch mode."""

        augmentd_preset = pipeline_pb2.PRESET_NNUNET_DA5
        configure_rotation_dummyDA_mirroring_and_inital_patch_size = \
            nnUNetTrainerDA5.configure_rotation_dummyDA_mirroring_and_inital_patch_size

    __all__.append("nnUNetTrainerAugmentdPatchDA5")
