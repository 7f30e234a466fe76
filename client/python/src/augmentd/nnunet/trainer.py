"""``nnUNetTrainerAugmentd``: nnUNetTrainer with its data loaders served by augmentd.

Everything but the two data loaders is nnUNetTrainer's own code. ``get_dataloaders`` reads the trainer's
configuration (patch size, initial patch size, rotation, dummy-2D, mirror axes, deep-supervision scales, batch
size and oversampling — per DDP rank —, input channels, use_mask_for_norm, regions, ignore label, the fold's
train/val cases from splits_final.json) and opens two dataset-mode sessions on an augmentd server:

* train: the class's own ``get_training_transforms``, translated (translate.py; sent as preset ``nnunet_default`` /
  ``nnunet_da5`` where the translation equals it, else as the explicit list) on enlarged ``initial_patch_size`` crops;
* val: its ``get_validation_transforms`` likewise (preset ``nnunet_validation``) on unaugmented ``patch_size`` crops.

Any other trainer class gets these loaders through ``dynamic.augmentd_trainer`` (``-tr <Trainer>__augmentd``).

Batches arrive as nnU-Net's loaders deliver them: ``{'data': float32 (B, C, *patch), 'target': [one tensor per
deep-supervision scale], 'keys': [...]}``. Sessions are closed at the end of training (``on_train_end``) and when
training fails; a server this trainer started is stopped then too.

Environment (all optional):

==========================  ==========================================================================================
AUGMENTD_ADDRESS            server to use: ``host:port`` or ``unix:///path``. Unset: start a private local server.
AUGMENTD_LOCAL_SERVER       ``auto`` (default: start a local server if AUGMENTD_ADDRESS is unset or does not answer),
                            ``never`` (fail instead), ``always`` (ignore AUGMENTD_ADDRESS).
AUGMENTD_CONNECT_TIMEOUT    seconds to wait for AUGMENTD_ADDRESS to answer (default 3).
AUGMENTD_LOCAL_CACHES       ``0``: a local server for a GPU session gets no case caches (default: LRU case caches of
                            min(16 GiB, 15 % of the GPU) on the GPU and min(16 GiB, 10 % of RAM / local ranks) in
                            pinned host memory, 8 prefetch threads, 4 GPU workers; config.local_server_args).
                            ``AUGMENTD_SERVER_ARGS`` adds flags to a local server and overrides these.
AUGMENTD_BIN                the ``augmentd`` binary for a local server (else ``augmentd`` on PATH, else the source
                            checkout's build/server/augmentd).
AUGMENTD_DEVICE             device the sessions run on (``cpu``, ``cuda:N``, ``GPU-<uuid>``); default: the trainer's
                            (its GPU by UUID, so CUDA_VISIBLE_DEVICES and a shared server agree).
AUGMENTD_DELIVERY           ``auto`` (default: CUDA IPC → host shared memory → inline, the first one that opens, for a
                            server on this machine; inline for a remote one), ``inline``, ``host_shm`` or ``cuda_ipc``.
AUGMENTD_SEED               base seed of the sessions (rank r uses base+2r / base+2r+1); default: random. With a fixed
                            seed a continued training (``--c``) resumes the batch sequence where it stopped.
AUGMENTD_CREDITS            batches requested ahead of use per loader (default 6; nnU-Net caches 6).
AUGMENTD_PREFETCH_DEPTH     batches the server prepares ahead per session = output slots (default 4: with the
                            server's 2, a batch that takes longer than a step to produce stalls the trainer; the
                            server's 2 where it refuses 4 batches of this size in flight).
==========================  ==========================================================================================
"""
from __future__ import annotations

import os
import random
import re

import torch
from nnunetv2.training.nnUNetTrainer.nnUNetTrainer import nnUNetTrainer

from augmentd.local_server import connect_or_start
from augmentd.sessions import AugmentdError, latency_line
from augmentd.v1 import pipeline_pb2, server_info_pb2

from .config import LoaderSettings, UnsupportedTrainerSetting, delivery_candidates, is_local_address, \
    local_server_args, settings_from_trainer, training_config, validation_config
from .loader import AugmentdLoader
from .translate import TrainerTranslation, translate_trainer


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    try:
        return int(value) if value else default
    except ValueError:
        raise ValueError(f"{name}={value!r}: expected an integer") from None


def _device_spec(device) -> str:
    """The trainer's device for the server. A GPU is named by its UUID: nnU-Net selects GPUs with
    CUDA_VISIBLE_DEVICES (its trainer always uses cuda:0), and a shared server numbers the node's GPUs its own way."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        uuid = str(getattr(torch.cuda.get_device_properties(index), "uuid", "") or "")
        if len(uuid) == 36 or (uuid.startswith("GPU-") and len(uuid) == 40):
            return uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
        return f"cuda:{index}"  # no UUID from this torch build: fine when the server sees the same GPUs
    return "cpu"  # cpu, and mps (augmentation then runs on the server's CPU engine)


def _hint(err: AugmentdError, dataset_folder: str) -> str:
    name = err.code.name
    if name in ("PERMISSION_DENIED", "FAILED_PRECONDITION") and "dataset" in err.details:
        return (f" — the server must be allowed to read {dataset_folder}: start it with "
                f"--dataset_root=$nnUNet_preprocessed (or unset AUGMENTD_ADDRESS to let the trainer start one)")
    if name == "NOT_FOUND":
        return f" — {dataset_folder} must exist at the same path on the server's machine"
    return ""


def _source_hint(details: str, pipe, translation, label: str) -> str:
    """" (= <bgv2 source> of <Trainer>.get_training_transforms)" for a refused ``pipeline.transforms[i]``."""
    m = re.search(r"pipeline\.transforms\[(\d+)\]", details)
    if not m or int(m.group(1)) >= len(pipe.entries):
        return ""
    fn = "get_training_transforms" if label == "train" else "get_validation_transforms"
    return f" (= {pipe.entries[int(m.group(1))].source} of {translation.trainer_class}.{fn})"


class nnUNetTrainerAugmentd(nnUNetTrainer):
    """nnUNetTrainer whose training and validation batches come from augmentd (see the module docstring)."""

    # Informational: the preset of the fast path when this class's own pipeline is nnUNetTrainer's. What a session
    # runs is decided by translating the trainer's get_training_transforms (translate.translate_trainer).
    augmentd_preset = pipeline_pb2.PRESET_NNUNET_DEFAULT

    def __init__(self, plans: dict, configuration: str, fold: int, dataset_json: dict,
                 device: torch.device = torch.device("cuda")):
        # nnUNetTrainer records its __init__ arguments by this signature (checkpoints): keep it exactly.
        super().__init__(plans, configuration, fold, dataset_json, device)
        self._augmentd_client = None
        self._augmentd_server = None
        self._augmentd_loaders = []

    # -- data loaders -------------------------------------------------------------------------------------------
    def get_dataloaders(self):
        settings = settings_from_trainer(self)
        translation = self._augmentd_translation()  # refuses (naming class and attribute) before anything starts
        for label, pipe, preset in (("train", translation.train, translation.train_preset),
                                    ("val", translation.val, translation.val_preset)):
            how = f"preset {pipeline_pb2.Preset.Name(preset)}" if preset else "explicit list"
            self.print_to_log_file(f"augmentd: {label} pipeline of {translation.trainer_class} translated: "
                                   f"{len(pipe.entries)} entries ({', '.join(e.kind for e in pipe.entries)}); {how}")
        try:
            return self._open_loaders(settings, translation)
        except BaseException:
            self._augmentd_close()
            raise

    def _augmentd_translation(self) -> TrainerTranslation:
        """The pipelines the sessions run: this class's own get_training_transforms / get_validation_transforms,
        translated (subclasses that describe their pipeline otherwise override this)."""
        return translate_trainer(self)

    def _open_loaders(self, s: LoaderSettings, translation: TrainerTranslation):
        device = os.environ.get("AUGMENTD_DEVICE") or _device_spec(self.device)
        delivery = os.environ.get("AUGMENTD_DELIVERY", "auto")
        address = os.environ.get("AUGMENTD_ADDRESS") or None
        start_local = os.environ.get("AUGMENTD_LOCAL_SERVER", "auto")
        timeout = float(os.environ.get("AUGMENTD_CONNECT_TIMEOUT") or 3.0)
        self._augmentd_client, self._augmentd_server = connect_or_start(
            address, device=device, dataset_roots=[os.path.dirname(s.dataset_folder)] + (
                [s.previous_stage_folder] if s.previous_stage_folder else []), start_local=start_local,
            connect_timeout=timeout, extra_args=self._local_server_args(device))
        where = (f"local server {self._augmentd_server.address} ({self._augmentd_server.binary})"
                 if self._augmentd_server else address)
        if self._augmentd_server and address:
            self.print_to_log_file(f"augmentd: no server answered at {address}; started a local one")
        seed_env = os.environ.get("AUGMENTD_SEED", "")
        base = _env_int("AUGMENTD_SEED", 0) if seed_env else random.SystemRandom().randrange(2 ** 62)
        credits = _env_int("AUGMENTD_CREDITS", 6)
        # 4 slots by default; if the server refuses that many for a large batch (max_inflight_bytes_per_session),
        # its own default (0 → 2) instead. An explicit AUGMENTD_PREFETCH_DEPTH is never changed.
        prefetch = _env_int("AUGMENTD_PREFETCH_DEPTH", 0) or None
        tag = f"{self.plans_manager.dataset_name} {self.configuration_name} fold {self.fold}"
        start = self.current_epoch * self.num_iterations_per_epoch if seed_env else 0
        val_start = self.current_epoch * self.num_val_iterations_per_epoch if seed_env else 0
        pin = self.device.type == "cuda"
        ds = s.deep_supervision_scales is not None
        local = self._augmentd_server is not None or is_local_address(address)
        candidates = delivery_candidates(delivery, device, local)
        # The fast path: a preset where the translation equals its expansion; else the explicit translated list.
        tr = translation
        train_extra = {"preset": tr.train_preset} if tr.train_preset else {"transforms": tr.train.protos()}
        val_extra = {} if tr.val_preset else {"transforms": tr.val.protos()}
        for make_config, extra, seed, first, expected, n_credits, label in (
                (training_config, train_extra, base + 2 * self.local_rank, start,
                 s.initial_patch_size, credits, "train"),
                (validation_config, val_extra, base + 2 * self.local_rank + 1, val_start, s.patch_size,
                 max(1, credits // 2), "val")):
            try:
                config, session = self._open_session(
                    lambda d, p: make_config(s, seed, d, device, f"{tag} {label}", p, **extra), candidates, first,
                    s.dataset_folder, prefetch)
            except AugmentdError as err:  # an explicit entry the server refuses: name the bgv2 object it came from
                pipe = tr.train if label == "train" else tr.val
                raise AugmentdError(err.code, err.details + _source_hint(err.details, pipe, tr, label),
                                    err.rpc) from None
            loader = AugmentdLoader(self._augmentd_client, session, ds, credits=n_credits, pin_memory=pin,
                                    name=config.name)
            self._augmentd_loaders.append(loader)
            got = list(session.initial_patch_size)
            if got[-len(expected):] != list(expected) or any(v != 1 for v in got[:-len(expected)]):
                raise UnsupportedTrainerSetting(
                    f"initial_patch_size: {type(self).__name__} crops {list(expected)} for {config.name!r} but the "
                    f"server derives {got} (augmentd applies nnU-Net's own rule; an overridden "
                    f"configure_rotation_dummyDA_mirroring_and_inital_patch_size must keep it)")
            self.print_to_log_file(
                f"augmentd: {config.name} session {session.session_id} on {session.device} via {where}: "
                f"delivery {server_info_pb2.DeliveryKind.Name(session.response.delivery)}, "
                f"batch {s.batch_size}, crop {got}, {len(config.dataset.case_ids)} cases, seed {config.seed}")
        train, val = self._augmentd_loaders
        # Like nnUNetTrainer.get_dataloaders: take one batch of each so that a broken setup fails here.
        next(train)
        next(val)
        return train, val

    # Errors after which ``auto`` tries the next delivery (the server or this machine cannot serve this one).
    _FALLBACK_CODES = ("INVALID_ARGUMENT", "FAILED_PRECONDITION", "UNIMPLEMENTED", "PERMISSION_DENIED",
                       "RESOURCE_EXHAUSTED")

    def _open_session(self, make_config, candidates, first: int, dataset_folder: str, prefetch=None):
        """Opens a session with the first delivery of ``candidates`` that works; returns (config, session).
        ``prefetch`` None: 4 output slots, or the server's default where it refuses 4 for this batch size."""
        for i, delivery in enumerate(candidates):
            config = make_config(delivery, 4 if prefetch is None else prefetch)
            last = i == len(candidates) - 1
            try:
                try:
                    return config, self._augmentd_client.open_session(config, start_batch_index=first)
                except AugmentdError as err:
                    if not (prefetch is None and err.code.name == "RESOURCE_EXHAUSTED"
                            and "config.prefetch_depth" in err.details):
                        raise
                    self.print_to_log_file(f"augmentd: {err.details}; using the server's default prefetch depth")
                    config = make_config(delivery, 0)
                    return config, self._augmentd_client.open_session(config, start_batch_index=first)
            except AugmentdError as err:
                if last or err.code.name not in self._FALLBACK_CODES:
                    raise AugmentdError(err.code, err.details + _hint(err, dataset_folder), err.rpc) from None
                why = f"{err.code.name}: {err.details}"
            except (OSError, RuntimeError) as err:  # slots the server offered cannot be mapped here
                if last:
                    raise
                why = f"{type(err).__name__}: {err}"
            self.print_to_log_file(f"augmentd: delivery {delivery} not available for {config.name!r} ({why}); "
                                   f"trying {candidates[i + 1]}")
        raise AssertionError("unreachable: candidates is never empty")

    def _local_server_args(self, device: str):
        """Flags for a local server (config.local_server_args) from this machine's GPU and RAM sizes."""
        gpu_total = 0
        if self.device.type == "cuda":
            gpu_total = torch.cuda.get_device_properties(self.device).total_memory
        try:
            host_total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            host_total = 0
        local_ranks = torch.cuda.device_count() if self.is_ddp and torch.cuda.is_available() else 1
        return local_server_args(device, os.environ.get("AUGMENTD_LOCAL_CACHES", "auto"), gpu_total, host_total,
                                 local_ranks, batch_size=int(self.configuration_manager.batch_size))

    # -- lifetime -----------------------------------------------------------------------------------------------
    def _augmentd_close(self) -> None:
        """Closes the sessions and the client, stops a server this trainer started. Idempotent."""
        loaders, self._augmentd_loaders = self._augmentd_loaders, []
        for loader in loaders:
            stats = loader.close()
            if stats is not None:
                self.print_to_log_file(f"augmentd: closed {loader.name}: {stats.batches_produced} batches; "
                                       f"{latency_line(stats)}")
        # Server first: closing the channel while batches are still referenced and then stopping the server
        # makes the interpreter wait ~10 s in gRPC's shutdown at exit.
        if self._augmentd_server is not None:
            rc = self._augmentd_server.stop()
            self.print_to_log_file(f"augmentd: local server stopped (exit status {rc})")
            self._augmentd_server = None
        if self._augmentd_client is not None:
            self._augmentd_client.close()
            self._augmentd_client = None

    def on_train_end(self):
        try:
            super().on_train_end()
        finally:
            self._augmentd_close()

    def run_training(self):
        try:
            super().run_training()
        finally:  # on_train_end already closed everything on success; this covers errors and interrupts
            self._augmentd_close()


class nnUNetTrainerAugmentd_smoke(nnUNetTrainerAugmentd):
    """2 epochs × 3 iterations (2 validation iterations): checks a setup end to end in a minute."""

    def __init__(self, plans: dict, configuration: str, fold: int, dataset_json: dict,
                 device: torch.device = torch.device("cuda")):
        super().__init__(plans, configuration, fold, dataset_json, device)
        self.num_epochs = 2
        self.num_iterations_per_epoch = 3
        self.num_val_iterations_per_epoch = 2


__all__ = ["nnUNetTrainerAugmentd", "nnUNetTrainerAugmentd_smoke", "UnsupportedTrainerSetting"]

try:  # nnUNetTrainerDA5 ships with nnU-Net >= 2.2
    from nnunetv2.training.nnUNetTrainer.variants.data_augmentation.nnUNetTrainerDA5 import nnUNetTrainerDA5
except ImportError:  # pragma: no cover - older nnU-Net
    nnUNetTrainerDA5 = None

if nnUNetTrainerDA5 is not None:
    class nnUNetTrainerAugmentdDA5(nnUNetTrainerAugmentd):
        """nnUNetTrainerDA5 served by augmentd: DA5's rotation, mirror axes and initial patch size (its own
        ``configure_rotation_dummyDA_mirroring_and_inital_patch_size``) with the server's ``nnunet_da5`` preset."""

        augmentd_preset = pipeline_pb2.PRESET_NNUNET_DA5
        configure_rotation_dummyDA_mirroring_and_inital_patch_size = \
            nnUNetTrainerDA5.configure_rotation_dummyDA_mirroring_and_inital_patch_size
        get_training_transforms = staticmethod(nnUNetTrainerDA5.get_training_transforms)

    __all__.append("nnUNetTrainerAugmentdDA5")



class nnUNetTrainerAugmentdDAExt(nnUNetTrainerAugmentd):
    """AugLab's nnUNetTrainerDAExtGPU served by augmentd: configured as that trainer is (nnU-Net's epochs and initial
    patch size, mirroring off for training and inference, a centre-crop SpatialTransform with p_rotation 0 /
    p_scaling 0 as its spatial step) and augmentd runs all of its augmentation — the CPU part, AugTransformsGPU from
    the AugLab GPU parameter JSON ($AUGLAB_PARAMS_GPU_JSON, else the installed package's file; see
    augmentd/nnunet/auglab_daext.py for the mapping and what is not reproduced) and the DS pyramid after it.
    Validation as nnUNetTrainerDAExtGPU: RemoveLabel, regions, AugLab's CPU z-score of channel 0, DS.
    ``auglab_per_batch`` (default True, as AugLab's same_on_batch=True): the GPU entries share what AugLab shares
    per batch (every decision; the parameters of all but RandConv / RedistributeSeg; the region coins of all but the
    inverse: AUGLAB_DAEXT.md, "Per-batch mode")."""

    auglab_per_batch = True

    def __init__(self, plans: dict, configuration: str, fold: int, dataset_json: dict,
                 device: torch.device = torch.device("cuda")):
        super().__init__(plans, configuration, fold, dataset_json, device)
        from . import auglab_daext

        self.auglab_params_path = str(auglab_daext.auglab_params_path())
        self.auglab_params = auglab_daext.load_auglab_params(self.auglab_params_path)
        # AugLab's AcqTransform picks its one axis once per run (torch.randint(0, 3) over x, y, z = axes 2, 1, 0)
        seed = os.environ.get("AUGMENTD_SEED")
        rng = random.Random(int(seed)) if seed else random.SystemRandom()
        self.auglab_acq_axis = 2 - rng.randrange(3)

    def configure_rotation_dummyDA_mirroring_and_inital_patch_size(self):
        rotation_for_DA, do_dummy_2d_data_aug, initial_patch_size, _ = \
            super().configure_rotation_dummyDA_mirroring_and_inital_patch_size()
        self.inference_allowed_mirroring_axes = None
        return rotation_for_DA, do_dummy_2d_data_aug, initial_patch_size, None

    def _augmentd_translation(self) -> TrainerTranslation:
        import dataclasses

        from . import auglab_daext

        base = translate_trainer(self)
        if self.is_cascaded:
            raise UnsupportedTrainerSetting("nnUNetTrainerAugmentdDAExt: cascade transforms are not implemented")
        lm = self.label_manager
        regions = lm.foreground_regions if lm.has_regions else None
        ignore = lm.ignore_label if lm.has_regions else None
        ds = self._get_deep_supervision_scales()
        ds = [list(map(float, s)) for s in ds] if ds is not None else None
        use_mask = list(self.configuration_manager.use_mask_for_norm or [])
        train = auglab_daext.daext_gpu_pipeline(self.auglab_params, patch_size=base.patch_size,
                                                acq_axis=self.auglab_acq_axis, use_mask_for_norm=use_mask,
                                                regions=regions, ignore_label=ignore, deep_supervision_scales=ds,
                                                per_batch=self.auglab_per_batch)
        val = auglab_daext.daext_gpu_validation_pipeline(len(base.patch_size), regions=regions, ignore_label=ignore,
                                                         deep_supervision_scales=ds)
        self.print_to_log_file(f"augmentd: AugLab parameters from {self.auglab_params_path}; AcqTransform axis "
                               f"{self.auglab_acq_axis}; not reproduced: {'; '.join(train.folded) or 'nothing listed'}")
        return dataclasses.replace(base, trainer_class=type(self).__name__, train=train, val=val,
                                   train_preset=pipeline_pb2.PRESET_UNSPECIFIED,
                                   val_preset=pipeline_pb2.PRESET_UNSPECIFIED)


__all__.append("nnUNetTrainerAugmentdDAExt")

# Issue 22: nnU-Net's own loader feeding augmentd patch mode. Its module imports this one, so it is loaded on first
# use (PEP 562); listed in __all__ so the registration shim's `import *` exports it for nnU-Net's lookup.
_PATCH_TRAINERS = ("nnUNetTrainerAugmentdPatch", "nnUNetTrainerAugmentdPatch_smoke", "nnUNetTrainerAugmentdPatchDA5")
__all__ += [n for n in _PATCH_TRAINERS if not n.endswith("DA5") or nnUNetTrainerDA5 is not None]


def __getattr__(name):
    if name in _PATCH_TRAINERS:
        from . import patch_trainer

        return getattr(patch_trainer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
