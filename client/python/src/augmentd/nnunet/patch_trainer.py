"""``nnUNetTrainerAugmentdPatch``: nnU-Net's own data loader and sampler, augmentd's patch mode for the transforms.

Where ``nnUNetTrainerAugmentd`` lets the server sample and read the dataset (dataset mode), this trainer keeps
nnU-Net's ``nnUNetDataLoader`` — its case choice, foreground oversampling, bounding boxes, crop and pad, and any
custom loader or dataset class a subclass brings — and runs it with ``transforms=None`` (crop and pad only, none of
its CPU transforms) in a few worker processes (or threads), each sample written once into a page-locked batch
buffer (``crop.py``: nnU-Net's own sampler calls, the same values). Each batch of enlarged patches goes to augmentd's
patch mode on the trainer's GPU through ``augmentd.PatchAugmenter``: a feeder thread copies it into the session's
server-owned CUDA input slot on its own stream, augmented with the server's ``nnunet_default`` pipeline (``nnunet_validation`` for the validation loader)
configured exactly like the trainer, and handed back through a CUDA IPC output slot as CUDA tensors — so
``train_step``'s ``.to(device)`` is a no-op. The next batches are copied and submitted while the trainer computes;
``next()`` only takes a finished result.

Server, device and seed selection are those of ``nnUNetTrainerAugmentd`` (same environment variables; a local
server is started when none answers). Also:

==========================  ==========================================================================================
AUGMENTD_PATCH_WORKERS      ``processes`` (default: spawned crop workers writing into shared, page-locked buffers;
                            the trainer's interpreter keeps its GIL) or ``threads`` (inside the trainer's process)
AUGMENTD_PATCH_THREADS      workers running nnU-Net's loader (crop and pad) per loader (default 4; validation: half)
AUGMENTD_PATCH_QUEUE        cropped batches queued ahead per loader (default 2)
AUGMENTD_PATCH_AHEAD        batches submitted to the server ahead of the trainer (input slots; default 2)
AUGMENTD_PATCH_FEED_PACE    experiment (default 0: off): the feeder waits this fraction (0-0.9) of the trainer's
                            iteration period after each ``next()`` before it takes the next cropped batch and submits
                            it, so its Python work (and the reader's, for that batch's answer) falls in the step's
                            backward / synchronisation, not into the GIL-bound launch of the forward pass; the
                            ``ahead`` batches already submitted keep the trainer fed meanwhile
==========================  ==========================================================================================
"""
from __future__ import annotations

import os
import queue
import random
import threading
import time
from typing import Optional

import numpy as np
import torch
from nnunetv2.training.dataloading.data_loader import nnUNetDataLoader

from augmentd.local_server import connect_or_start
from augmentd.patch import PatchAugmenter
from augmentd.v1 import pipeline_pb2, session_pb2

from .crop import BatchBuffers, LoaderSpec, ProcessBatches, crop_batch
from .config import settings_from_trainer, training_config, validation_config
from .trainer import _device_spec, _env_int, nnUNetTrainerAugmentd

_STOP = object()


class ThreadedBatches:
    """nnU-Net's sampler, crop and pad (``crop.crop_batch``: nnU-Net's own calls, each sample written once into a
    reusable batch buffer, page-locked on a GPU) in ``threads`` threads, each with its own loader object; filled
    buffers go into a queue of ``depth``. ``next()`` returns ``(image, seg, keys)``: (B, C, *crop) float32 and
    (B, S, *crop) int16 host tensors of the enlarged patch size, to hand back with ``recycle((image, seg))`` once
    their bytes were copied."""

    def __init__(self, make_loader, threads: int, depth: int, seed: int, name: str, shapes, pin: bool):
        self.name = name
        self._queue: "queue.Queue" = queue.Queue(maxsize=max(1, depth))
        self._stop = threading.Event()
        self._threads = []
        batch_size, channels, seg_channels, crop = shapes
        # every thread's buffer, the queue's, and the one being handed over
        self._buffers = BatchBuffers(batch_size, channels, seg_channels, crop, threads + depth + 1, pin)
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
                pair = self._buffers.get(self._stop)
                if pair is None:
                    return
                keys = crop_batch(loader, *pair)
                while not self._stop.is_set():
                    try:
                        self._queue.put((pair[0], pair[1], keys), timeout=0.2)
                        break
                    except queue.Full:
                        continue
        except BaseException as err:  # noqa: BLE001 (raised by next())
            self._queue.put(err)

    def __next__(self):
        while True:
            try:
                item = self._queue.get(timeout=0.2)
                break
            except queue.Empty:
                if self._stop.is_set():
                    raise StopIteration from None
        if isinstance(item, BaseException):
            raise RuntimeError(f"augmentd {self.name}: nnU-Net's data loader failed: {item}") from item
        return item

    def recycle(self, pair) -> None:
        self._buffers.put(pair)

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
    """Cropped batches from ``batches`` augmented by ``augmenter`` on the server: a feeder thread copies each into
    a free input slot (on its own CUDA stream, from page-locked memory, so the copy overlaps the trainer's step)
    and submits it, up to ``ahead`` batches before the trainer asks. ``next()`` only takes the next result:
    ``{'data': CUDA (B, C, *patch), 'target': [CUDA tensors per deep-supervision scale] (or one tensor),
    'keys': [...]}`` — views of the session's output slot, valid until the next ``next()`` (as nnU-Net's training
    loop uses a batch)."""

    def __init__(self, batches: ThreadedBatches, augmenter: PatchAugmenter, deep_supervision: bool, name: str,
                 ahead: int, pace: float = 0.0):
        if not 0.0 <= pace <= 0.9:
            raise ValueError(f"AUGMENTD_PATCH_FEED_PACE: {pace} is not in [0, 0.9]")
        self.name = name
        # Feed pacing (AUGMENTD_PATCH_FEED_PACE): the feeder submits `pace` x the trainer's iteration period (a running
        # mean of the intervals between next() calls, at most 1 s) after the last next().
        self._pace = pace
        self._taken_at: Optional[float] = None
        self._period: Optional[float] = None
        self._batches = batches
        self._aug = augmenter
        self._deep_supervision = deep_supervision
        self.session = augmenter.session
        self.batches_taken = 0
        self._credits = threading.Semaphore(max(1, min(ahead, augmenter.depth)))  # submitted, not yet taken
        self._submitted: "queue.SimpleQueue" = queue.SimpleQueue()  # C-level put / get: less on next()'s path
        self._stop = threading.Event()
        self._feeder = threading.Thread(target=self._feed, name=f"augmentd-{name}-feed", daemon=True)
        self._feeder.start()

    def _feed(self) -> None:
        stream = None
        device = self._aug.device
        try:
            if device.startswith("cuda"):
                torch.cuda.set_device(device)
                stream = torch.cuda.Stream(device=device)
            while not self._stop.is_set():
                if not self._credits.acquire(timeout=0.2):
                    continue
                self._wait_for_pace()
                try:
                    image, seg, keys = next(self._batches)
                except StopIteration:
                    return
                try:
                    if stream is not None:
                        with torch.cuda.stream(stream):  # not the trainer's stream: overlaps its kernels
                            future = self._aug.submit(image, seg)
                    else:
                        future = self._aug.submit(image, seg)
                finally:
                    self._batches.recycle((image, seg))  # submit copied the bytes into the input slot
                self._submitted.put((future, keys))
        except BaseException as err:  # noqa: BLE001 (raised by next())
            self._submitted.put(err)

    def _wait_for_pace(self) -> None:
        taken, period = self._taken_at, self._period
        if self._pace <= 0 or taken is None or period is None:
            return
        delay = taken + self._pace * period - time.monotonic()
        if delay > 0:
            self._stop.wait(delay)

    def __iter__(self) -> "AugmentdPatchLoader":
        return self

    def __next__(self) -> dict:
        item = self._submitted.get()
        if isinstance(item, BaseException):
            raise RuntimeError(f"augmentd {self.name}: feeding patch mode failed: {item}") from item
        future, keys = item
        image, targets = self._aug.result(future)
        if self._pace > 0:
            now = time.monotonic()
            if self._taken_at is not None:
                interval = min(1.0, now - self._taken_at)  # an epoch's validation gap counts as 1 s at most
                self._period = interval if self._period is None else 0.8 * self._period + 0.2 * interval
            self._taken_at = now
        self._credits.release()
        self.batches_taken += 1
        return {"data": image, "target": targets if self._deep_supervision else targets[0], "keys": keys}

    def close(self) -> Optional[object]:
        """Stops the feeder and loader threads and closes the session; returns its final SessionStats (None if
        closed)."""
        self._stop.set()
        self._batches.close()
        self._feeder.join(timeout=5)
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


def _batch_bytes(shapes) -> int:
    batch_size, channels, seg_channels, crop = shapes
    return int(batch_size * int(np.prod(crop)) * (4 * channels + 2 * seg_channels))


def _shm_free_bytes() -> Optional[int]:
    """Free bytes of /dev/shm (where torch puts shared tensors), None when it cannot be read."""
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


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
        depth = _env_int("AUGMENTD_PATCH_QUEUE", 2)
        ahead = max(1, _env_int("AUGMENTD_PATCH_AHEAD", 2))
        pace = float(os.environ.get("AUGMENTD_PATCH_FEED_PACE") or 0.0)
        workers = (os.environ.get("AUGMENTD_PATCH_WORKERS") or "processes").strip().lower()
        if workers not in ("processes", "threads"):
            raise ValueError(f"AUGMENTD_PATCH_WORKERS: {workers!r} is neither 'processes' nor 'threads'")
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
            aug = PatchAugmenter(self._augmentd_client, config, depth=ahead, hold=1)
            if aug.patch_size[-len(crop):] != list(crop):
                aug.close()
                raise RuntimeError(f"initial_patch_size: the server derives {aug.patch_size}, nnU-Net crops {crop}")

            spec = LoaderSpec(nnUNetDataLoader, data=dataset, batch_size=self.batch_size, patch_size=crop,
                              final_patch_size=s.patch_size, label_manager=self.label_manager,
                              oversample_foreground_percent=self.oversample_foreground_percent,
                              sampling_probabilities=None, pad_sides=None, transforms=None,
                              probabilistic_oversampling=self.probabilistic_oversampling)
            pin = aug.device.startswith("cuda")
            shapes = (self.batch_size, aug.image_channels, aug.seg_channels, crop)
            kind = workers
            if kind == "processes":
                need = _batch_bytes(shapes) * (n_threads + depth + 1)
                room = _shm_free_bytes()
                if room is not None and room < 1.25 * need:  # tmpfs over-commit would end in SIGBUS, not an error
                    self.print_to_log_file(
                        f"augmentd: /dev/shm has {room >> 20} MiB free, {label} crop workers in processes need "
                        f"{need >> 20} MiB: running them as threads (AUGMENTD_PATCH_WORKERS=threads)")
                    kind = "threads"
            if kind == "processes":
                batches = ProcessBatches(spec, n_threads, depth, seed, f"{label} loader", shapes, pin)
            else:
                batches = ThreadedBatches(spec.build, n_threads, depth, seed, f"{label} loader", shapes, pin)
            loader = AugmentdPatchLoader(batches, aug, ds, config.name, ahead, pace if label == "train" else 0.0)
            self._augmentd_loaders.append(loader)
            self.print_to_log_file(
                f"augmentd: {config.name} session {aug.session.session_id} on {aug.device}: input slots "
                f"{aug.input_slots}, delivery {aug.session.response.delivery}, batch {s.batch_size}, crop {crop}, "
                f"{n_threads} loader {kind}")
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
