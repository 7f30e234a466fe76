"""Sessions, batches and the credit-driven batch stream of the augmentd Python client.

    with augmentd.Client("unix:///tmp/augmentd.sock") as client:
        session = client.open_session(augmentd.dataset_session_config("/data/Dataset001_X", batch_size=2))
        for batch in client.stream_batches(session, max_batches=20):
            image = batch.image          # numpy (B, C, *patch), float32
            targets = batch.targets      # list of numpy label maps, full resolution first
        client.close_session(session)
"""
from __future__ import annotations

import dataclasses
import queue
import threading
from typing import Iterator, List, Optional, Sequence

import grpc
import numpy as np

from augmentd.v1 import batch_pb2, pipeline_pb2, session_pb2, tensor_pb2

from .tensors import to_numpy, to_torch


class AugmentdError(Exception):
    """A failed augmentd call: ``code`` is the ``grpc.StatusCode``, ``details`` the server's message
    (which names the offending field or limit)."""

    def __init__(self, code: grpc.StatusCode, details: str, rpc: str = ""):
        self.code = code
        self.details = details
        self.rpc = rpc
        super().__init__(f"{rpc + ': ' if rpc else ''}{code.name}: {details}")

    @classmethod
    def from_rpc_error(cls, err: grpc.RpcError, rpc: str = "") -> "AugmentdError":
        return cls(err.code(), err.details() or "", rpc)


@dataclasses.dataclass
class Session:
    """An open session (OpenSessionResponse): its id, the device it runs on, the initial patch size."""
    session_id: str
    response: session_pb2.OpenSessionResponse
    config: session_pb2.SessionConfig

    @property
    def device(self) -> str:
        return self.response.device.name

    @property
    def initial_patch_size(self) -> List[int]:
        return list(self.response.initial_patch_size)


class Batch:
    """One augmented batch: numpy views of the inline tensors (read-only, no copy) plus sample infos."""

    def __init__(self, proto: batch_pb2.Batch):
        self.proto = proto

    @property
    def session_id(self) -> str:
        return self.proto.session_id

    @property
    def batch_index(self) -> int:
        return self.proto.batch_index

    @property
    def image(self) -> np.ndarray:
        """(B, C, *patch) in the session's image dtype (bfloat16 as uint16 bit patterns; see ``torch``)."""
        return to_numpy(self.proto.image)

    @property
    def targets(self) -> List[np.ndarray]:
        """The deep-supervision label pyramid, full resolution first: (B, 1 or R, *patch·scale_k)."""
        return [to_numpy(t) for t in self.proto.targets]

    @property
    def sample_indices(self) -> List[int]:
        return [s.sample_index for s in self.proto.samples]

    @property
    def case_ids(self) -> List[str]:
        return [s.case_id for s in self.proto.samples]

    def torch(self, device=None):
        """(image, [targets]) as torch tensors (copies), on ``device`` if given."""
        return to_torch(self.proto.image, device), [to_torch(t, device) for t in self.proto.targets]


class BatchStream:
    """Iterates the batches of one ``StreamBatches`` call while keeping credits ahead of the consumer.

    A background thread receives messages into a local queue, so the next batch is usually already in this
    process when ``next()`` asks for it. The server may send at most ``credits`` batches ahead: every batch
    taken from the queue returns one credit. ``close()`` (or leaving a ``with`` block, or exhausting the
    iterator) ends the call. Errors from the server are raised as ``AugmentdError``.
    """

    _END = object()

    def __init__(self, stub, session_id: str, credits: int = 4, start_batch_index: int = 0,
                 max_batches: int = 0, timeout: Optional[float] = None):
        if credits < 1:
            raise ValueError("credits must be >= 1")
        self.session_id = session_id
        self.end: Optional[batch_pb2.StreamEnd] = None
        self._requests: "queue.Queue" = queue.Queue()
        self._received: "queue.Queue" = queue.Queue()
        self._requests.put(batch_pb2.StreamBatchesRequest(start=batch_pb2.StreamStart(
            session_id=session_id, start_batch_index=start_batch_index, initial_credits=credits,
            max_batches=max_batches)))
        self._call = stub.StreamBatches(self._request_iter(), timeout=timeout)
        self._closed = False
        self._reader = threading.Thread(target=self._read, name=f"augmentd-stream-{session_id}", daemon=True)
        self._reader.start()

    def _request_iter(self):
        while True:
            item = self._requests.get()
            if item is self._END:
                return
            yield item

    def _read(self) -> None:
        try:
            for response in self._call:
                if response.WhichOneof("msg") == "end":
                    self.end = response.end
                    continue
                self._received.put(Batch(response.batch))
            self._received.put(self._END)
        except grpc.RpcError as err:
            self._received.put(err)

    def __iter__(self) -> Iterator[Batch]:
        return self

    def __next__(self) -> Batch:
        if self._closed:
            raise StopIteration
        item = self._received.get()
        if item is self._END:
            self.close()
            raise StopIteration
        if isinstance(item, grpc.RpcError):
            self._closed = True
            self._requests.put(self._END)
            if item.code() == grpc.StatusCode.CANCELLED and self._closed_by_us:
                raise StopIteration
            raise AugmentdError.from_rpc_error(item, "StreamBatches")
        self._requests.put(batch_pb2.StreamBatchesRequest(credit=batch_pb2.Credit(credits=1)))
        return item

    _closed_by_us = False

    @property
    def buffered(self) -> int:
        """Batches received and not yet taken."""
        return self._received.qsize()

    def close(self) -> None:
        """Ends the call (half-close, then cancel what is left)."""
        if not self._closed:
            self._closed = True
            self._closed_by_us = True
            self._requests.put(self._END)
            self._call.cancel()
        self._reader.join(timeout=10)

    def __enter__(self) -> "BatchStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def trainer_config(patch_size: Sequence[int] = (), deep_supervision_scales: Sequence[Sequence[float]] = (),
                   num_input_channels: int = 0) -> pipeline_pb2.TrainerConfig:
    """A TrainerConfig. Leave ``patch_size`` empty in dataset mode to take everything from the dataset's plans."""
    return pipeline_pb2.TrainerConfig(
        patch_size=list(patch_size), num_input_channels=num_input_channels,
        deep_supervision_scales=[pipeline_pb2.Scale(factors=list(s)) for s in deep_supervision_scales])


def dataset_session_config(dataset_path: str, batch_size: int = 2, seed: int = 0,
                           preset: int = pipeline_pb2.PRESET_NNUNET_DEFAULT,
                           trainer: Optional[pipeline_pb2.TrainerConfig] = None, case_ids: Sequence[str] = (),
                           prefetch_depth: int = 0, device: str = "", name: str = "",
                           image_dtype: int = tensor_pb2.DTYPE_UNSPECIFIED,
                           label_dtype: int = tensor_pb2.DTYPE_UNSPECIFIED) -> session_pb2.SessionConfig:
    """A dataset-mode SessionConfig: the server samples, loads and augments patches of ``dataset_path``
    (an nnU-Net preprocessed dataset folder or its configuration folder, under a --dataset_root)."""
    return session_pb2.SessionConfig(
        name=name, pipeline=pipeline_pb2.PipelineSpec(preset=preset, trainer=trainer or trainer_config()),
        dataset=session_pb2.DatasetModeConfig(dataset_path=dataset_path, case_ids=list(case_ids)),
        batch_size=batch_size, seed=seed, prefetch_depth=prefetch_depth, device=device,
        image_dtype=image_dtype, label_dtype=label_dtype)


def patch_session_config(patch_size: Sequence[int], batch_size: int = 2, seed: int = 0,
                         preset: int = pipeline_pb2.PRESET_NNUNET_DEFAULT,
                         deep_supervision_scales: Sequence[Sequence[float]] = (), num_image_channels: int = 1,
                         device: str = "", name: str = "", image_dtype: int = tensor_pb2.DTYPE_UNSPECIFIED,
                         label_dtype: int = tensor_pb2.DTYPE_UNSPECIFIED) -> session_pb2.SessionConfig:
    """A patch-mode SessionConfig: the client sends (B, C, *initial_patch_size) patches with ``Client.augment``."""
    return session_pb2.SessionConfig(
        name=name,
        pipeline=pipeline_pb2.PipelineSpec(preset=preset, trainer=trainer_config(
            patch_size, deep_supervision_scales, num_image_channels)),
        patch=session_pb2.PatchModeConfig(num_image_channels=num_image_channels),
        batch_size=batch_size, seed=seed, device=device, image_dtype=image_dtype, label_dtype=label_dtype)
