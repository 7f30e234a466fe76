"""nnU-Net's crop and pad, written straight into reusable (pinned) batch buffers.

``nnUNetDataLoader.generate_train_batch`` with ``transforms=None`` draws the batch's cases (``get_indices``), decides
foreground oversampling per sample (``get_do_oversample``), loads each case (``self._data.load_case``), draws its
bounding box (``get_bbox``) and builds the sample with ``crop_and_pad_nd`` (constant 0 for the image, -1 for the
segmentation cast to int16, the previous stage's segmentation appended in the cascade), then copies every sample
into a freshly allocated batch tensor. For a 205³ crop that is several full passes over ~50 MB per sample in numpy
(``np.pad``) under the GIL: ~130 ms per sample on one core.

``crop_batch`` makes the same calls in the same order — so the same draws from numpy's generator, the same cases,
boxes and values, bit for bit (tests/python/nnunet/test_crop.py) — but writes each sample once into a caller's
buffer: the part of the box inside the case is copied with torch (parallel, GIL released) and only the part
outside is filled. A loader whose class overrides ``generate_train_batch`` (a custom sampler) or has transforms is
run as it is and its batch copied into the buffer.

    bufs = BatchBuffers(batch_size, channels, seg_channels, crop, pin=True)
    image, seg = bufs.get()
    keys = crop_batch(loader, image, seg)       # (B, C, *crop) float32, (B, S, *crop) int16, filled
    ...; bufs.put((image, seg))                 # back to the pool once the batch was handed over
"""
from __future__ import annotations

import queue
import threading
from typing import List, Optional, Sequence, Tuple

import numpy as np
import torch
from nnunetv2.training.dataloading.data_loader import nnUNetDataLoader


def _copy_box(dst: torch.Tensor, src, lbs: Sequence[int], ubs: Sequence[int], pad: float,
              channel_axis: bool = True) -> None:
    """dst (C, *box) = src (C, *shape) cropped to [lbs, ubs) per spatial axis, ``pad`` outside the case
    (``channel_axis=False``: src is (*shape), dst (1, *box))."""
    shape = src.shape[1:] if channel_axis else src.shape
    lo = [max(0, int(a)) for a in lbs]
    hi = [min(int(s), int(b)) for s, b in zip(shape, ubs)]
    if any(h <= l for l, h in zip(lo, hi)):
        dst.fill_(pad)
        return
    dst_sl = tuple(slice(l - int(a), h - int(a)) for l, h, a in zip(lo, hi, lbs))
    inside = all(l == int(a) and h == int(b) for l, h, a, b in zip(lo, hi, lbs, ubs))
    if not inside:  # fill only the slabs outside the case, axis by axis
        for ax, (sl, n) in enumerate(zip(dst_sl, dst.shape[1:])):
            pre = (slice(None),) + dst_sl[:ax] + (slice(0, sl.start),)
            post = (slice(None),) + dst_sl[:ax] + (slice(sl.stop, n),)
            if sl.start > 0:
                dst[pre].fill_(pad)
            if sl.stop < n:
                dst[post].fill_(pad)
    box = tuple(slice(l, h) for l, h in zip(lo, hi))
    region = np.asarray(src[((slice(None),) + box) if channel_axis else box])
    if not channel_axis:
        region = region[None]
    if not region.flags.writeable:  # memory-mapped .npy: torch wants a writeable array (it only reads)
        region = np.array(region)
    dst[(slice(None),) + dst_sl].copy_(torch.from_numpy(region))


def _is_plain(loader) -> bool:
    return (type(loader).generate_train_batch is nnUNetDataLoader.generate_train_batch
            and getattr(loader, "transforms", None) is None)


def crop_batch(loader: nnUNetDataLoader, image: torch.Tensor, seg: torch.Tensor) -> List[str]:
    """Fills ``image`` (B, C, *crop) and ``seg`` (B, S, *crop) with one batch of ``loader`` (nnU-Net's sampler,
    crop and pad); returns the batch's keys. Same values as ``loader.generate_train_batch()`` after the same numpy
    seed (its ``data`` / ``target``), written in place."""
    if not _is_plain(loader):
        batch = loader.generate_train_batch()
        target = batch["target"][0] if isinstance(batch["target"], list) else batch["target"]
        image.copy_(torch.as_tensor(batch["data"]))
        seg.copy_(torch.as_tensor(target))
        return list(batch["keys"])
    keys = loader.get_indices()
    with torch.no_grad():
        for j, key in enumerate(keys):
            force_fg = loader.get_do_oversample(j)
            data, case_seg, seg_prev, properties = loader._data.load_case(key)
            lbs, ubs = loader.get_bbox(data.shape[1:], force_fg, properties["class_locations"])
            img_j, seg_j = image[j], seg[j]
            if loader.patch_size_was_2d:  # the loader crops (1, H, W) boxes and drops the axis
                img_j, seg_j = img_j.unsqueeze(1), seg_j.unsqueeze(1)
            n = case_seg.shape[0]
            _copy_box(img_j, data, lbs, ubs, 0)
            _copy_box(seg_j[:n], case_seg, lbs, ubs, -1)
            if seg_prev is not None:
                _copy_box(seg_j[n:n + 1], seg_prev, lbs, ubs, -1, channel_axis=False)
    return list(keys)


class BatchBuffers:
    """A pool of ``count`` (image, seg) batch buffers of (B, C, *crop) float32 and (B, S, *crop) int16, in
    page-locked memory when ``pin`` (host-to-device copies at full speed, asynchronous)."""

    def __init__(self, batch_size: int, channels: int, seg_channels: int, crop: Sequence[int], count: int,
                 pin: bool):
        self._free: "queue.Queue" = queue.Queue()
        for _ in range(max(1, count)):
            self._free.put((torch.empty((batch_size, channels, *crop), dtype=torch.float32, pin_memory=pin),
                            torch.empty((batch_size, seg_channels, *crop), dtype=torch.int16, pin_memory=pin)))

    def get(self, stop: Optional[threading.Event] = None) -> Optional[Tuple[torch.Tensor, torch.Tensor]]:
        """A free pair; None once ``stop`` is set."""
        while True:
            try:
                return self._free.get(timeout=0.2)
            except queue.Empty:
                if stop is not None and stop.is_set():
                    return None

    def put(self, pair: Tuple[torch.Tensor, torch.Tensor]) -> None:
        self._free.put(pair)


__all__ = ["BatchBuffers", "crop_batch"]


# ---- crop workers in processes ----------------------------------------------------------------------------------
# Threads share the trainer's GIL: its main thread re-acquires it after every release inside train_step, and crop
# threads holding it stretch the step (the H200 e2e: wait 0.1 ms, but the step +9 ms). Processes, as nnU-Net's own
# loader uses, keep the trainer's interpreter to itself; the batches land in shared memory (page-locked in place
# with cudaHostRegister on a GPU), so nothing is pickled but the keys.

class LoaderSpec:
    """What a worker process needs to build its own ``loader_class(**kwargs)`` (picklable: nnU-Net's dataset and
    label manager objects are)."""

    def __init__(self, loader_class, **kwargs):
        self.loader_class, self.kwargs = loader_class, kwargs

    def build(self):
        return self.loader_class(**self.kwargs)


def _worker_main(spec: LoaderSpec, seed: int, buffers, free, ready, blosc_threads: int) -> None:
    torch.set_num_threads(1)
    try:
        import blosc2

        blosc2.set_nthreads(max(1, blosc_threads))
    except Exception:  # noqa: BLE001 (no blosc2: .npy / .npz datasets)
        pass
    np.random.seed(seed % (2 ** 32))
    try:
        loader = spec.build()
        while True:
            idx = free.get()
            if idx is None:
                return
            keys = crop_batch(loader, *buffers[idx])
            ready.put((idx, keys))
    except BaseException as err:  # noqa: BLE001 (raised by the parent's next())
        ready.put((None, f"{type(err).__name__}: {err}"))


class ProcessBatches:
    """``workers`` processes (spawned: the parent's gRPC and CUDA threads are not forked) each running nnU-Net's
    sampler, crop and pad (``crop_batch``) into batch buffers in shared memory. Same interface as the patch
    trainer's ``ThreadedBatches``: ``next()`` → ``(image, seg, keys)``, ``recycle((image, seg))``, ``close()``."""

    def __init__(self, spec: LoaderSpec, workers: int, depth: int, seed: int, name: str, shapes, pin: bool,
                 blosc_threads: int = 2):
        import torch.multiprocessing as tmp

        self.name = name
        batch_size, channels, seg_channels, crop = shapes
        count = workers + depth + 1
        self._buffers = [(torch.empty((batch_size, channels, *crop), dtype=torch.float32).share_memory_(),
                          torch.empty((batch_size, seg_channels, *crop), dtype=torch.int16).share_memory_())
                         for _ in range(count)]
        self._registered = []
        if pin:
            self._pin()
        self._index = {pair[0].data_ptr(): k for k, pair in enumerate(self._buffers)}
        ctx = tmp.get_context("spawn")
        self._free, self._ready = ctx.Queue(), ctx.Queue()
        for k in range(count):
            self._free.put(k)
        self._procs = [ctx.Process(target=_worker_main, daemon=True, name=f"augmentd-{name}-crop-{k}",
                                   args=(spec, seed + 7919 * k, self._buffers, self._free, self._ready,
                                         blosc_threads))
                       for k in range(max(1, workers))]
        for p in self._procs:
            p.start()
        self._closed = False

    def _pin(self) -> None:
        try:
            cudart = torch.cuda.cudart()
            for pair in self._buffers:
                for t in pair:
                    nbytes = t.numel() * t.element_size()
                    if int(cudart.cudaHostRegister(t.data_ptr(), nbytes, 0)) == 0:
                        self._registered.append(t.data_ptr())
        except Exception:  # noqa: BLE001 (pageable copies are slower, not wrong)
            pass

    def __next__(self):
        import queue as _q

        while True:
            try:
                idx, keys = self._ready.get(timeout=0.5)
                break
            except _q.Empty:
                if self._closed:
                    raise StopIteration from None
                dead = [p for p in self._procs if not p.is_alive()]
                if dead:
                    raise RuntimeError(f"augmentd {self.name}: crop worker {dead[0].name} exited "
                                       f"(exit code {dead[0].exitcode})")
        if idx is None:
            raise RuntimeError(f"augmentd {self.name}: nnU-Net's data loader failed in a worker: {keys}")
        image, seg = self._buffers[idx]
        return image, seg, keys

    def recycle(self, pair) -> None:
        self._free.put(self._index[pair[0].data_ptr()])

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for _ in self._procs:
            self._free.put(None)
        for p in self._procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
                p.join(timeout=2)
        if self._registered:
            cudart = torch.cuda.cudart()
            for ptr in self._registered:
                cudart.cudaHostUnregister(ptr)
            self._registered = []


__all__ += ["LoaderSpec", "ProcessBatches"]
