"""An nnU-Net trainer's data-loading configuration and its augmentd session configs.

``settings_from_trainer`` reads everything ``nnUNetTrainer.get_dataloaders`` uses (by calling the trainer's own
methods, so subclasses that override e.g. ``configure_rotation_dummyDA_mirroring_and_inital_patch_size`` or
``_get_deep_supervision_scales`` are honoured) into a plain ``LoaderSettings``; ``training_config`` /
``validation_config`` turn it into dataset-mode ``SessionConfig`` messages (presets ``nnunet_default`` and
``nnunet_validation``). A setting augmentd cannot express raises ``UnsupportedTrainerSetting`` naming it — the
trainer never silently trains with a different pipeline.
"""
from __future__ import annotations

import dataclasses
import os
from typing import List, Optional, Sequence, Tuple

import numpy as np

from augmentd.v1 import pipeline_pb2, server_info_pb2, session_pb2

DELIVERIES = {
    "auto": server_info_pb2.DELIVERY_KIND_UNSPECIFIED,  # the server's default (inline); see delivery_candidates
    "inline": server_info_pb2.DELIVERY_KIND_INLINE,
    "host_shm": server_info_pb2.DELIVERY_KIND_HOST_SHM,
    "cuda_ipc": server_info_pb2.DELIVERY_KIND_CUDA_IPC,
}


LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]")


def is_local_address(address: Optional[str]) -> bool:
    """Whether ``address`` (``host:port`` or ``unix:///path``) names this machine (slot deliveries need that)."""
    if not address:
        return False
    if address.startswith("unix:") or address.startswith("unix-abstract:"):
        return True
    host = address.rsplit(":", 1)[0] if address.count(":") == 1 or address.startswith("[") else address
    return host in LOCAL_HOSTS


# A local server the trainer starts for a GPU session gets case caches and workers like the measured end-to-end
# runs (bench/results/2026-11-30-h200-e2e.md, 16 GiB GPU + 16 GiB host caches, 8 prefetch threads, 4 GPU workers:
# DA5 +3.5 % median over compute only; 2026-11-30-h200-e2e-s4.md without caches: +25 %, every batch read from disk).
# A training reads every case, so an LRU budget fills up to min(dataset, budget): the budgets are capped by the
# machine — the GPU one by a share of the trainer's GPU (the training needs the rest), the host one (pinned memory)
# by a share of RAM split between the ranks of this node.
CACHE_CAP_BYTES = 16 << 30
GPU_CACHE_SHARE = 0.15
HOST_CACHE_SHARE = 0.10


DEFAULT_MAX_BATCH_SIZE = 64  # server/options.h ServerLimitsOptions::max_batch_size


def local_server_args(device: str, caches: str = "auto", gpu_total_bytes: int = 0, host_total_bytes: int = 0,
                      local_ranks: int = 1, batch_size: int = 0) -> List[str]:
    """Extra flags for a trainer-started local server on ``device``: for a GPU (``cuda:N``, ``GPU-<uuid>``) unless
    ``caches`` is ``"0"`` (AUGMENTD_LOCAL_CACHES), a GPU case cache of min(16 GiB, 15 % of ``gpu_total_bytes``), a
    host one of min(16 GiB, 10 % of ``host_total_bytes`` / ``local_ranks``) (a budget of 0 bytes is left out), 8
    prefetch threads and 4 GPU workers; none of these for the CPU. On any device, ``--max_batch_size`` is raised to
    the trainer's ``batch_size`` when that exceeds the server's default of 64 (nnU-Net's 2d plans reach a few
    hundred). $AUGMENTD_SERVER_ARGS comes after them on the command line, so any of its flags wins."""
    limits = [f"--max_batch_size={batch_size}"] if batch_size > DEFAULT_MAX_BATCH_SIZE else []
    if caches == "0" or not (device.startswith("cuda") or device.startswith("GPU-")):
        return limits
    gpu = min(CACHE_CAP_BYTES, round(GPU_CACHE_SHARE * max(0, gpu_total_bytes)))
    host = min(CACHE_CAP_BYTES, round(HOST_CACHE_SHARE * max(0, host_total_bytes)) // max(1, local_ranks))
    args = [f"--dataset_gpu_cache={gpu}"] if gpu > 0 else []
    args += [f"--dataset_host_cache={host}"] if host > 0 else []
    return limits + args + ["--dataset_prefetch_threads=8", "--gpu_workers=4"]


def delivery_candidates(requested: str, device: str, local: bool) -> List[str]:
    """The deliveries to try, in order, for ``AUGMENTD_DELIVERY=requested`` on ``device``.

    An explicit delivery is tried alone. ``auto`` prefers zero copy where it can work: a server on this machine
    serves a CUDA session through CUDA IPC (batches already on the trainer's GPU), falling back to host shared
    memory and then inline; a CPU session through host shared memory, then inline; a remote server inline only.
    """
    if requested not in DELIVERIES:
        raise ValueError(f"AUGMENTD_DELIVERY must be one of {', '.join(DELIVERIES)}, got {requested!r}")
    if requested != "auto":
        return [requested]
    if not local:
        return ["inline"]
    on_gpu = device.startswith("cuda") or device.startswith("GPU-")
    return (["cuda_ipc"] if on_gpu else []) + ["host_shm", "inline"]


class UnsupportedTrainerSetting(ValueError):
    """An nnU-Net trainer setting that augmentd cannot reproduce; the message names it and what to do."""


@dataclasses.dataclass
class LoaderSettings:
    """What nnU-Net's two data loaders are built from (``nnUNetTrainer.get_dataloaders``)."""
    dataset_folder: str                      # the configuration folder, e.g. .../nnUNetPlans_3d_fullres
    patch_size: List[int]
    initial_patch_size: List[int]
    rotation: Tuple[float, float]            # radians
    do_dummy_2d_data_aug: bool
    mirror_axes: Optional[List[int]]         # None or empty: no mirroring
    deep_supervision_scales: Optional[List[List[float]]]  # None: deep supervision off (target is one tensor)
    batch_size: int
    oversample_foreground_percent: float
    probabilistic_oversampling: bool
    num_input_channels: int
    use_mask_for_norm: List[bool]
    regions: Optional[List[List[int]]]       # foreground regions, or None for label training
    ignore_label: Optional[int]
    train_ids: List[str]
    val_ids: List[str]
    # Cascade (3d_cascade_fullres): nnU-Net's folder_with_segs_from_previous_stage; the server crops each case's
    # previous-stage segmentation as seg channel 1, as nnUNetDataLoader does. None outside a cascade.
    previous_stage_folder: Optional[str] = None


def _overridden(trainer, name: str) -> bool:
    from nnunetv2.training.nnUNetTrainer.nnUNetTrainer import nnUNetTrainer

    return getattr(type(trainer), name) is not getattr(nnUNetTrainer, name)


def _rotation(value) -> Tuple[float, float]:
    if isinstance(value, (int, float)):
        return float(value), float(value)
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, (int, float, np.floating))
                                                                    for v in value):
        return float(value[0]), float(value[1])
    raise UnsupportedTrainerSetting(
        f"rotation_for_DA={value!r}: augmentd takes a uniform range (min, max) in radians; "
        f"a sampling function cannot be sent to the server")


def _region(r) -> List[int]:
    return [int(v) for v in (r if isinstance(r, (tuple, list)) else (r,))]


def settings_from_trainer(trainer) -> LoaderSettings:
    """Reads an initialized ``nnUNetTrainer``'s loader configuration. Raises ``UnsupportedTrainerSetting``."""
    # The transforms themselves: translate.translate_trainer (the trainer's own get_*_transforms, any override).
    cm, lm = trainer.configuration_manager, trainer.label_manager
    previous = None
    channels = int(trainer.num_input_channels)
    if trainer.is_cascaded:
        # nnU-Net's network input counts the one-hot channels of the previous stage; the data has the others.
        previous = str(trainer.folder_with_segs_from_previous_stage)
        channels -= len(lm.foreground_labels)
        if not os.path.isdir(previous):
            raise UnsupportedTrainerSetting(
                f"configuration {trainer.configuration_name!r} is a cascade stage: its previous stage's predictions "
                f"{previous} do not exist (train {cm.previous_stage_name!r} first; nnU-Net writes them in its "
                f"final validation)")
    rotation, dummy_2d, initial_patch_size, mirror_axes = \
        trainer.configure_rotation_dummyDA_mirroring_and_inital_patch_size()
    ds = trainer._get_deep_supervision_scales()
    train_ids, val_ids = trainer.do_split()
    return LoaderSettings(
        dataset_folder=trainer.preprocessed_dataset_folder,
        patch_size=[int(p) for p in cm.patch_size],
        initial_patch_size=[int(p) for p in initial_patch_size],
        rotation=_rotation(rotation),
        do_dummy_2d_data_aug=bool(dummy_2d),
        mirror_axes=None if mirror_axes is None else [int(a) for a in mirror_axes],
        deep_supervision_scales=None if ds is None else [[float(f) for f in s] for s in ds],
        batch_size=int(trainer.batch_size),
        oversample_foreground_percent=float(trainer.oversample_foreground_percent),
        probabilistic_oversampling=bool(trainer.probabilistic_oversampling),
        num_input_channels=channels,
        use_mask_for_norm=[bool(b) for b in (cm.use_mask_for_norm or [])],
        regions=[_region(r) for r in lm.foreground_regions] if lm.has_regions else None,
        ignore_label=None if lm.ignore_label is None else int(lm.ignore_label),
        train_ids=[str(k) for k in train_ids],
        val_ids=[str(k) for k in val_ids],
        previous_stage_folder=previous,
    )


def _trainer_proto(s: LoaderSettings, augmented: bool, crop: Optional[Sequence[int]] = None
                   ) -> pipeline_pb2.TrainerConfig:
    t = pipeline_pb2.TrainerConfig(
        patch_size=s.patch_size, num_input_channels=s.num_input_channels, use_mask_for_norm=s.use_mask_for_norm,
        deep_supervision_scales=[pipeline_pb2.Scale(factors=f) for f in (s.deep_supervision_scales or [])],
        regions=[pipeline_pb2.Region(labels=r) for r in (s.regions or [])])
    if s.ignore_label is not None:
        t.ignore_label = s.ignore_label
    if augmented:
        t.rotation.CopyFrom(pipeline_pb2.Range(min=s.rotation[0], max=s.rotation[1]))
        t.mirror_axes.CopyFrom(pipeline_pb2.AxisList(axes=s.mirror_axes or []))  # set and empty: no mirroring
        t.do_dummy_2d_data_aug = s.do_dummy_2d_data_aug
    if crop is not None:
        t.initial_patch_size.extend(int(v) for v in crop)
    return t


def installed_bgv2_version() -> str:
    """The server's name for this environment's batchgeneratorsv2 SpatialTransform semantics: "0.3.6" from 0.3.6
    on (pad-first segmentation resampling), "0.3.5" before (0.3.4's and 0.3.5's argmax agree); "0.3.6" when bgv2
    is not installed (what ``pip install nnunetv2`` gets today)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        installed = version("batchgeneratorsv2")
    except PackageNotFoundError:
        return "0.3.6"
    release = tuple(int(p) if p.isdigit() else 0 for p in installed.split(".")[:3])
    return "0.3.6" if release >= (0, 3, 6) else "0.3.5"


def _session(s: LoaderSettings, preset: int, augmented: bool, case_ids: Sequence[str], seed: int, delivery: str,
             device: str, name: str, prefetch_depth: int, transforms=None, crop=None) -> session_pb2.SessionConfig:
    if delivery not in DELIVERIES:
        raise ValueError(f"delivery must be one of {', '.join(DELIVERIES)}, got {delivery!r}")
    if not case_ids:
        raise UnsupportedTrainerSetting(f"{name}: the split has no cases for this loader")
    return session_pb2.SessionConfig(
        name=name, pipeline=_pipeline(s, preset, augmented, transforms, crop),
        dataset=session_pb2.DatasetModeConfig(
            dataset_path=s.dataset_folder, case_ids=list(case_ids),
            oversample_foreground_percent=s.oversample_foreground_percent,
            probabilistic_oversampling=s.probabilistic_oversampling,
            previous_stage_segs_path=s.previous_stage_folder or ""),
        delivery=DELIVERIES[delivery], batch_size=s.batch_size, seed=seed, device=device,
        prefetch_depth=prefetch_depth)


def _pipeline(s: LoaderSettings, preset: int, augmented: bool, transforms, crop) -> pipeline_pb2.PipelineSpec:
    """A preset (the server expands it and derives the crop), or an explicit list (translate.Pipeline.protos())
    with the crop nnU-Net's loader cuts for it."""
    if transforms is None:
        return pipeline_pb2.PipelineSpec(preset=preset, trainer=_trainer_proto(s, augmented),
                                         bgv2_version=installed_bgv2_version())
    if crop is None:
        raise ValueError("an explicit transform list needs the crop (initial_patch_size) it is applied to")
    return pipeline_pb2.PipelineSpec(trainer=_trainer_proto(s, augmented, crop), transforms=list(transforms),
                                     bgv2_version=installed_bgv2_version())


def training_config(s: LoaderSettings, seed: int, delivery: str = "auto", device: str = "", name: str = "train",
                    prefetch_depth: int = 0, preset: int = pipeline_pb2.PRESET_NNUNET_DEFAULT,
                    transforms=None) -> session_pb2.SessionConfig:
    """nnU-Net's training loader: the fold's train cases, ``preset`` (default ``nnunet_default``; ``nnunet_da5``
    for nnUNetTrainerDA5) configured like the trainer — or, with ``transforms`` (a translated pipeline's
    TransformSpec list), that explicit list on crops of ``s.initial_patch_size``."""
    return _session(s, preset, True, s.train_ids, seed, delivery, device, name, prefetch_depth, transforms,
                    s.initial_patch_size if transforms is not None else None)


def validation_config(s: LoaderSettings, seed: int, delivery: str = "auto", device: str = "", name: str = "val",
                      prefetch_depth: int = 0, transforms=None) -> session_pb2.SessionConfig:
    """nnU-Net's validation loader: unaugmented ``patch_size`` crops of the fold's val cases (preset
    ``nnunet_validation``, or the explicit ``transforms`` of a translated get_validation_transforms)."""
    return _session(s, pipeline_pb2.PRESET_NNUNET_VALIDATION, False, s.val_ids, seed, delivery, device, name,
                    prefetch_depth, transforms, s.patch_size if transforms is not None else None)
