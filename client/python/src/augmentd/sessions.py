"""Sessions, batches and the credit-driven batch stream of the augmentd Python client.

    with augmentd.Client("unix:///tmp/augmentd.sock") as client:
        session = client.open_session(augmentd.dataset_session_config("/data/Dataset001_X", batch_size=2))
        for batch in client.stream_batches(session, max_batches=20):
            image = batch.image          # numpy (B, C, *patch), float32
            targets = batch.targets      # list of numpy label maps, full resolution first
        client.close_session(session)

Delivery (``SessionConfig.delivery``): INLINE (default) carries the bytes in the message (remote clients).
HOST_SHM and CUDA_IPC (co-located clients; dataset mode) put each batch in one of the session's output slots,
which ``Client.open_session`` opens once (``augmentd.slots``): ``batch.image`` / ``batch.targets`` /
``batch.torch()`` then view the slot without a copy (CUDA_IPC: ``batch.torch()`` gives CUDA tensors on the slot's
GPU; ``batch.image`` is not available). Lifetime rule: a slot batch is valid until the ``hold``-th next batch is
taken from the stream (default ``hold=1``: until the next one) or the stream closes; then its slot is released to
the server and may be overwritten. ``.clone()`` / ``.copy()`` what must live longer, or take a larger ``hold``.
"""
from __future__ import annotations

import collections
import dataclasses
import queue
import sys
import threading
import time
from typing import Iterator, List, Optional, Sequence

import grpc
import numpy as np

from augmentd.v1 import batch_pb2, pipeline_pb2, server_info_pb2, session_pb2, tensor_pb2

from .slots import SlotSet
from .tensors import to_numpy, to_torch
from .wire import DecodedResponse


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
    """An open session (OpenSessionResponse): its id, the device it runs on, the initial patch size and, for
    HOST_SHM / CUDA_IPC delivery, its opened output slots."""
    session_id: str
    response: session_pb2.OpenSessionResponse
    config: session_pb2.SessionConfig
    slots: Optional[SlotSet] = None

    @property
    def session_token(self) -> str:
        """The session's owner credential (OpenSessionResponse.session_token): every call on it carries it."""
        return self.response.session_token

    @property
    def delivery(self) -> int:
        """The delivery the server chose (``DeliveryKind``)."""
        return self.response.delivery

    @property
    def device(self) -> str:
        return self.response.device.name

    @property
    def initial_patch_size(self) -> List[int]:
        return list(self.response.initial_patch_size)


class Batch:
    """One augmented batch: numpy views of its tensors (no copy: of the message bytes for inline delivery, of the
    session's shared-memory slot for HOST_SHM) plus sample infos. A slot batch also carries ``lease`` (see the
    module docstring for how long it is valid)."""

    def __init__(self, proto: batch_pb2.Batch, slots: Optional[SlotSet] = None, release=None, inline=None):
        self.proto = proto
        self._slots = slots
        self._release = release
        self._inline = inline  # augmentd.wire: views of the received bytes (image, then targets) instead of inline_data
        self._lease = proto.lease if proto.HasField("lease") else None
        self.released = False
        self.received_at = 0.0  # time.perf_counter() when the stream's reader thread received it
        self.received_unix_ns = 0  # time.time_ns() then (compare with sent_unix_ns on the same host)
        self._torch = None  # torch() without a device, made once (by the reader thread: BatchStream(prepare=True))

    @property
    def sent_unix_ns(self) -> int:
        """Server wall clock (Unix ns) when it started writing this batch to the stream (0 if unknown)."""
        return self.proto.timing.sent_unix_ns

    @property
    def lease(self) -> Optional[batch_pb2.SlotLease]:
        """The slot lease (HOST_SHM / CUDA_IPC delivery), else None."""
        return self._lease

    def _numpy(self, tensor, k: int) -> np.ndarray:
        """Tensor ``k`` (0: the image, 1 + j: target j) as numpy, without a copy."""
        if tensor.WhichOneof("storage") == "inline_data" or self._slots is None:
            data = self._inline[k] if self._inline is not None else None
            return to_numpy(tensor, data)
        return self._slots.numpy(tensor)

    def release(self) -> None:
        """Returns the batch's slot to the server now (its views must not be used afterwards). Idempotent; a no-op
        for inline batches. ``BatchStream`` calls it for you (``hold``)."""
        if not self.released and self._release is not None and self.lease is not None:
            self._release(self)
        self.released = True

    @property
    def session_id(self) -> str:
        return self.proto.session_id

    @property
    def batch_index(self) -> int:
        return self.proto.batch_index

    @property
    def image(self) -> np.ndarray:
        """(B, C, *patch) in the session's image dtype (bfloat16 as uint16 bit patterns; see ``torch``)."""
        return self._numpy(self.proto.image, 0)

    @property
    def targets(self) -> List[np.ndarray]:
        """The deep-supervision label pyramid, full resolution first: (B, 1 or R, *patch·scale_k)."""
        return [self._numpy(t, 1 + j) for j, t in enumerate(self.proto.targets)]

    @property
    def sample_indices(self) -> List[int]:
        return [s.sample_index for s in self.proto.samples]

    @property
    def case_ids(self) -> List[str]:
        return [s.case_id for s in self.proto.samples]

    def torch(self, device=None):
        """(image, [targets]) as torch tensors, on ``device`` if given. Inline batches: copies. Slot batches: views
        of the slot without a copy (CPU for HOST_SHM, the slot's GPU for CUDA_IPC) unless ``device`` asks for
        another device. Without ``device`` the tensors are made once and the same objects returned again."""
        if device is None and self._torch is not None:
            return self._torch
        if self._slots is None or self.proto.image.WhichOneof("storage") == "inline_data":
            out = to_torch(self.proto.image, device, self.image), [to_torch(t, device, a) for t, a in
                                                                   zip(self.proto.targets, self.targets)]
        else:
            out = (self._slots.torch(self.proto.image, device),
                   [self._slots.torch(t, device) for t in self.proto.targets])
        if device is None:
            self._torch = out
        return out


class BatchStream:
    """Iterates the batches of one ``StreamBatches`` call while keeping credits ahead of the consumer.

    A background thread receives messages, decodes them and (``prepare``) makes their torch tensors, so when the
    service keeps up ``next()`` only takes a finished ``Batch`` from a local buffer. The server may send at most
    ``credits`` batches ahead: every batch taken returns one credit. Credits and the releases of slot leases go
    back together in one message per ``min(credits, slots - hold) // 2`` batches (every message costs this process
    some GIL time on gRPC's threads; slot sessions with few spare slots send every release at once so the server can
    produce during the training step), and at once whenever ``next()`` would otherwise wait. ``close()`` (or leaving a ``with``
    block, or exhausting the iterator) ends the call. Errors from the server are raised as ``AugmentdError``.

    Slot delivery (``slots`` given): taking a batch retires all but the ``hold`` most recently taken batches
    (default 1: a batch stays valid until the next one is taken; a retired batch has ``released`` set and its
    lease goes back with the next credit message); ``close()`` releases the rest (the server also reclaims every
    lease of a stream that ends or whose client vanishes). ``hold`` must be smaller than the number of slots, or
    the server could never produce the next batch; a session with ``prefetch_depth >= credits + hold + 1``
    slots lets the server produce while the trainer holds its batches.

    ``auto_credit=False``: taking a batch does not return its credit; the caller grants credits with ``grant(n)``
    (retired leases are then released at once). ``prepare``: make the tensors of ``Batch.torch()`` on the reader
    thread (default: for slot batches, when torch is already imported by this process).
    """

    _END = object()

    def __init__(self, stub, session_id: str, credits: int = 4, start_batch_index: int = 0,
                 max_batches: int = 0, timeout: Optional[float] = None, slots: Optional[SlotSet] = None,
                 hold: int = 1, auto_credit: bool = True, prepare: Optional[bool] = None, session_token: str = ""):
        if credits < 1:
            raise ValueError("credits must be >= 1")
        if slots is not None and len(slots) > 0 and not 0 <= hold < len(slots):
            raise ValueError(f"hold must be in [0, {len(slots)}) for a session with {len(slots)} output slots")
        self.session_id = session_id
        self._slots = slots if slots is not None and len(slots) > 0 else None
        self._hold = hold
        self._auto_credit = auto_credit
        # Default: slot batches (views: cheap) when this process uses torch; inline tensors are copies, made on demand.
        self._prepare = ("torch" in sys.modules and self._slots is not None) if prepare is None else prepare
        # Batching credit messages must not starve the producer of slots: with few slots beyond the held ones, a
        # retired slot goes back at once (the server produces the next batch into it during the training step).
        spare = len(self._slots) - hold if self._slots is not None else credits
        self._credit_chunk = max(1, min(credits, spare) // 2)
        self._owed = 0
        self._retired: List[batch_pb2.SlotLease] = []  # leases of retired batches not yet sent back
        self._held: "collections.deque[Batch]" = collections.deque()
        self.end: Optional[batch_pb2.StreamEnd] = None
        self._requests: "queue.SimpleQueue" = queue.SimpleQueue()
        # Received items (Batch, _END or an RpcError): appended by the reader, taken by next() without a lock when
        # one is there; the condition is only for waiting.
        self._received: "collections.deque" = collections.deque()
        self._arrived = threading.Condition(threading.Lock())
        self._requests.put(batch_pb2.StreamBatchesRequest(start=batch_pb2.StreamStart(
            session_id=session_id, session_token=session_token, start_batch_index=start_batch_index,
            initial_credits=credits,
            max_batches=max_batches)))
        # Client's stubs also carry StreamBatches with augmentd.wire's deserializer (inline bytes not copied).
        self._call = getattr(stub, "StreamBatchesDecoded", stub.StreamBatches)(self._request_iter(), timeout=timeout)
        self._closed = False
        self._reader = threading.Thread(target=self._read, name=f"augmentd-stream-{session_id}", daemon=True)
        self._reader.start()

    def _request_iter(self):
        while True:
            item = self._requests.get()
            if item is self._END:
                return
            yield item

    def _deliver(self, item) -> None:
        self._received.append(item)
        with self._arrived:
            self._arrived.notify()

    def _read(self) -> None:
        try:
            for response in self._call:
                inline = None
                if isinstance(response, DecodedResponse):  # augmentd.wire (Client's stub): inline bytes as views
                    response, inline = response.message, response.inline
                if response.WhichOneof("msg") == "end":
                    self.end = response.end
                    continue
                batch = Batch(response.batch, self._slots, self._send_release, inline)
                if self._prepare:
                    batch.torch()
                batch.received_at = time.perf_counter()
                batch.received_unix_ns = time.time_ns()
                self._deliver(batch)
            self._deliver(self._END)
        except grpc.RpcError as err:
            self._deliver(err)
        except BaseException as err:  # e.g. a slot view that cannot be made: next() raises it
            self._deliver(err)
            self._call.cancel()

    def __iter__(self) -> Iterator[Batch]:
        return self

    def _take(self):
        try:
            return self._received.popleft()
        except IndexError:
            pass
        self._flush()  # about to wait: everything owed goes back now (the server may need the slots)
        with self._arrived:
            while not self._received:
                self._arrived.wait()
        return self._received.popleft()

    def _finish(self, item):
        """next() of the end marker or an error: StopIteration or AugmentdError."""
        if item is self._END:
            self.close()
            raise StopIteration
        self._closed = True
        self._requests.put(self._END)
        if not isinstance(item, grpc.RpcError):
            raise item
        if item.code() == grpc.StatusCode.CANCELLED and self._closed_by_us:
            raise StopIteration
        raise AugmentdError.from_rpc_error(item, "StreamBatches")

    def __next__(self) -> Batch:
        # The trainer's hot path when batches are received ahead: keep it to a few attribute operations.
        if self._closed:
            raise StopIteration
        item = self._take()
        if not isinstance(item, Batch):
            self._finish(item)
        if item._lease is not None:
            held = self._held
            held.append(item)
            while len(held) > self._hold:
                old = held.popleft()
                if not old.released:
                    old.released = True
                    self._retired.append(old._lease)
        if self._auto_credit:
            self._owed += 1
            if self._owed >= self._credit_chunk:
                self._flush()
        elif self._retired:
            self._flush()  # manual credits: release at once (the server may produce into the slot meanwhile)
        return item

    def _flush(self) -> None:
        """Sends the credits owed and the retired leases in one message."""
        if self._closed or (self._owed == 0 and not self._retired):
            return
        if self._owed > 0:
            self._requests.put(batch_pb2.StreamBatchesRequest(
                credit=batch_pb2.Credit(credits=self._owed, releases=self._retired)))
        else:
            self._requests.put(batch_pb2.StreamBatchesRequest(release=batch_pb2.Release(leases=self._retired)))
        self._owed = 0
        self._retired = []
        self.messages_sent += 1

    messages_sent = 0  # credit / release messages sent by next() and close() (each wakes gRPC's sender thread)

    def _send_release(self, batch: Batch) -> None:
        if not self._closed:
            self._requests.put(batch_pb2.StreamBatchesRequest(release=batch_pb2.Release(leases=[batch.lease])))

    def grant(self, credits: int, releases=()) -> None:
        """Grants ``credits`` more batches (manual flow control: streams made with ``auto_credit=False``), returning
        the raw ``SlotLease``s ``releases`` in the same message."""
        self._requests.put(batch_pb2.StreamBatchesRequest(
            credit=batch_pb2.Credit(credits=credits, releases=list(releases))))

    def release(self, leases) -> None:
        """Sends a Release of raw ``SlotLease`` messages (low level; ``Batch.release`` is the usual way)."""
        self._requests.put(batch_pb2.StreamBatchesRequest(release=batch_pb2.Release(leases=list(leases))))

    _closed_by_us = False

    @property
    def buffered(self) -> int:
        """Batches received and not yet taken."""
        return sum(1 for item in list(self._received) if isinstance(item, Batch))

    def close(self) -> None:
        """Ends the call (half-close, then cancel what is left). Held and retired slot batches are released."""
        while self._held:
            old = self._held.popleft()
            if not old.released:
                old.released = True
                self._retired.append(old._lease)
        if not self._closed:
            self._owed = 0
            self._flush()
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
                           label_dtype: int = tensor_pb2.DTYPE_UNSPECIFIED,
                           delivery=server_info_pb2.DELIVERY_KIND_UNSPECIFIED) -> session_pb2.SessionConfig:
    """A dataset-mode SessionConfig: the server samples, loads and augments patches of ``dataset_path``
    (an nnU-Net preprocessed dataset folder or its configuration folder, under a --dataset_root).

    ``delivery``: a ``DeliveryKind`` or one of "inline" (default; works remotely), "host_shm" (shared-memory slots,
    same host and user) and "cuda_ipc" (CUDA slots on the session's GPU, same host; the session must run on a CUDA
    device). ``prefetch_depth`` is also the number of output slots (0: the server's default, 2)."""
    return session_pb2.SessionConfig(
        name=name, pipeline=pipeline_pb2.PipelineSpec(preset=preset, trainer=trainer or trainer_config()),
        dataset=session_pb2.DatasetModeConfig(dataset_path=dataset_path, case_ids=list(case_ids)),
        batch_size=batch_size, seed=seed, prefetch_depth=prefetch_depth, device=device,
        image_dtype=image_dtype, label_dtype=label_dtype, delivery=delivery_kind(delivery))


def delivery_kind(delivery) -> int:
    """A ``DeliveryKind`` from itself or its short name ("inline", "host_shm", "cuda_ipc")."""
    if isinstance(delivery, str):
        return server_info_pb2.DeliveryKind.Value("DELIVERY_KIND_" + delivery.upper())
    return int(delivery)


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


def latency_line(stats: server_info_pb2.SessionStats) -> str:
    """One line of a SessionStats' server-side timings (medians / p99 in ms over the last 1024 batches), e.g.
    ``load 12.1/30.2 ms, compute 3.4/9.8 ms, produced→sent 0.2/1.1 ms (p50/p99)``: where a training waits, this
    says whether reading (load), augmentation (compute) or delivery is the slow part (produced→sent includes the
    time a batch waits for the trainer's credit, so it is long when the trainer is the slow side; for the unary
    ``augment`` call it is the whole call). With the server's GPU case cache, load is only the enqueueing of the
    crops, which then count in compute. Empty summaries are left out."""
    parts = []
    for label, s in (("load", stats.load_latency), ("compute", stats.compute_latency),
                     ("produced→sent", stats.batch_latency)):
        if s.count:
            parts.append(f"{label} {s.p50_us / 1e3:.1f}/{s.p99_us / 1e3:.1f} ms")
    return (", ".join(parts) + " (p50/p99)") if parts else "no timings"
