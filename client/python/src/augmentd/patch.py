"""Patch mode for a trainer on the same host: ``PatchAugmenter`` hands patches to augmentd through the session's
server-owned input slots and gets each batch back through its output slots, over one ``StreamPatches`` stream.

    with augmentd.Client("unix:///tmp/augmentd.sock") as client:
        config = augmentd.patch_session_config((128, 128, 128), batch_size=2, device="cuda:0",
                                               deep_supervision_scales=[[1, 1, 1], [.5, .5, .5]])
        with augmentd.PatchAugmenter(client, config) as aug:
            image, targets = aug(image, seg)          # torch CUDA tensors in and out on cuda:0, no host copy
            ticket = aug.submit(image2, seg2)         # overlap: augmented while the trainer computes
            ...; image2, targets2 = aug.result(ticket)

Where the bytes go. A CUDA session: the input slots are device memory of the server (cudaMalloc'd, exported once
with cudaIpcGetMemHandle and opened here once); ``submit`` copies the caller's tensors into a free slot (a
device-to-device copy on the current torch stream, or host-to-device on the augmenter's own stream for host
tensors), records the slot's IPC event after the copies and sends the slot's lease; the server's stream waits on
the event, the kernels read the slot and write the batch into an output slot that ``result`` returns as torch views
(CUDA IPC delivery). A CPU session: the same with host shared-memory slots and CPU tensors (a CUDA session's host
shm slots are page-locked by the server: the device copies straight from and into them). With ``inline=True`` (or
a server on another host) the patches travel as message bytes instead, encoded with one copy.

Lifetime: the tensors ``result`` returns view an output slot; it goes back to the server when ``hold`` later results
have been taken (default 1: the next ``result`` / call) or the augmenter closes — ``.clone()`` what must live
longer, use ``result(..., copy=True)``, or take a larger ``hold`` (e.g. one per thread that uses results at once).

Thread-safety: ``submit``, ``result`` and ``__call__`` may be used from several threads; requests are sent and
answered in ``submit`` order. At most ``depth`` batches are submitted and not yet taken; a further ``submit``
waits for a ``result`` (of any thread). Errors of the server (bad input, closed session) are raised by ``result``
as ``AugmentdError`` naming the field; client-side checks (a tensor on another GPU, one that does not fit its
slot) raise ``ValueError`` before anything is sent.
"""
from __future__ import annotations

import collections
import itertools
import math
import queue
import threading
import time
from typing import List, Optional, Tuple

import grpc
import numpy as np

from augmentd.v1 import batch_pb2, server_info_pb2, session_pb2, tensor_pb2

from .sessions import AugmentdError, Batch, Session
from .slots import HostShmMemory
from .tensors import _FROM_NUMPY, from_numpy, numpy_dtype
from .wire import (_CHUNK_MIN, DecodedResponse, EncodedRequest, _copy_threads,  # noqa: F401 (moved to wire)
                   _parallel_copyto, encode_chunked_request, encode_stream_request, encode_varint, patch_chunk_bytes,
                   widen_unix_send_buffer)

_END = object()
_HOST_SHM = server_info_pb2.DELIVERY_KIND_HOST_SHM
_CUDA_IPC = server_info_pb2.DELIVERY_KIND_CUDA_IPC
_INLINE = server_info_pb2.DELIVERY_KIND_INLINE


_ALL_CREDITS = 1 << 31


def _align256(n: int) -> int:
    return (n + 255) & ~255


# Wire tags (field number << 3 | wire type) of the StreamPatches requests built as bytes (the encoded stub sends
# bytes as they are): StreamBatchesRequest.patches = 4 and .release = 3, AugmentRequest.batch_index = 2 (varint) and
# .input_slot = 6, Release.leases = 1.
_TAG_PATCHES, _TAG_RELEASE, _TAG_BATCH_INDEX, _TAG_INPUT_SLOT, _TAG_LEASES = b"\x22", b"\x1a", b"\x10", b"\x32", b"\x0a"


def _len_field(tag: bytes, body: bytes) -> bytes:
    return tag + encode_varint(len(body)) + body


def patch_request_bytes(constant: bytes, batch_index: int, lease: bytes) -> bytes:
    """A StreamBatchesRequest{patches} as wire bytes: ``constant`` (a serialized AugmentRequest with the fields that
    stay the same per input slot and layout: session, image and segmentation tensors) followed by batch_index and
    input_slot (the serialized SlotLease). Parses as the message with all of them set (protobuf merges fields)."""
    return _len_field(_TAG_PATCHES, constant + _TAG_BATCH_INDEX + encode_varint(batch_index) +
                      _len_field(_TAG_INPUT_SLOT, lease))


def release_request_bytes(leases) -> bytes:
    """A StreamBatchesRequest{release: Release{leases}} as wire bytes."""
    return _len_field(_TAG_RELEASE, b"".join(_len_field(_TAG_LEASES, lease.SerializeToString()) for lease in leases))


class _Layout:
    """What ``_fill`` needs per (input slot, image shape, segmentation shape), made once: offsets, sizes, the
    slot views and the request's constant part (serialized for the encoded stub, a template message otherwise)."""

    __slots__ = ("ibytes", "soff", "sbytes", "iview", "sview", "ihost", "shost", "template", "constant")


class PatchFuture:
    """One submitted batch: ``PatchAugmenter.result(future)`` (or ``future.result()``) waits for it."""

    __slots__ = ("batch_index", "_augmenter", "_done", "_batch", "_error", "taken", "submit_ns", "sent_ns",
                 "received_ns", "returned_ns")

    def __init__(self, augmenter: "PatchAugmenter", batch_index: int, submit_ns: int = 0):
        self.batch_index = batch_index
        # Wall clock (time.time_ns(), comparable with the server's BatchTiming on the same host) of the call's
        # phases: submit() entered, its request queued for the stream, the batch received by the reader thread,
        # result() returning. ``phases()`` turns them and the server's timing into milliseconds.
        self.submit_ns = submit_ns
        self.sent_ns = self.received_ns = self.returned_ns = 0
        self._augmenter = augmenter
        self._done = threading.Event()
        self._batch: Optional[Batch] = None
        self._error: Optional[BaseException] = None
        self.taken = False

    def done(self) -> bool:
        return self._done.is_set()

    def result(self, timeout: Optional[float] = None, copy: bool = False):
        return self._augmenter.result(self, timeout=timeout, copy=copy)

    def phases(self) -> dict:
        """Where this call's time went, in ms (a taken result of a StreamPatches server that reports the times):
        ``submit`` (copies into the input slot / message building), ``request`` (queued → the server read it: the
        gRPC request path), ``queue`` (server: read → engine start), ``compute`` (the engine), ``delivery``
        (server: engine done → batch written), ``response`` (written → the client's reader thread has it, with its
        slot views) and ``result`` (reader → result() returned: wake-up, the release). Missing server times give
        {}."""
        t = self._batch.proto.timing if self._batch is not None else None
        if t is None or not t.received_unix_ns or not self.returned_ns:
            return {}
        done = t.started_unix_ns + t.compute_us * 1000
        ms = lambda a, b: (b - a) / 1e6  # noqa: E731
        return {"submit": ms(self.submit_ns, self.sent_ns), "request": ms(self.sent_ns, t.received_unix_ns),
                "queue": ms(t.received_unix_ns, t.started_unix_ns), "compute": t.compute_us / 1e3,
                "delivery": ms(done, t.sent_unix_ns), "response": ms(t.sent_unix_ns, self.received_ns),
                "result": ms(self.received_ns, self.returned_ns)}

    def _set(self, batch=None, error=None) -> None:
        self._batch, self._error = batch, error
        self._done.set()


class _InputSlot:
    """One server input slot opened in this process: host shm (numpy views) or CUDA IPC (torch views)."""

    def __init__(self, slot: session_pb2.OutputSlot):
        self.kind = slot.WhichOneof("region")
        region = getattr(slot, self.kind)
        self.name = region.name
        self.byte_size = region.byte_size
        if self.kind == "host_shm":
            self.memory = HostShmMemory(region.key, region.offset, region.byte_size)
        else:
            from .cuda_ipc import CudaIpcMemory

            # With its event: the copies into the slot are handed over by cudaEventRecord, not a synchronisation.
            self.memory = CudaIpcMemory(region.mem_handle, region.byte_size, region.device_uuid, region.event_handle)
        self._views = {}

    def view(self, offset: int, shape, dtype):
        """A writable view (numpy for host shm, torch CUDA for CUDA IPC), made once per layout."""
        key = (offset, tuple(shape), np.dtype(dtype).str)
        out = self._views.get(key)
        if out is None:
            if self.kind == "host_shm":
                out = self.memory.array(offset, shape, dtype)
            else:
                out = self.memory.tensor(offset, shape, dtype)
            self._views[key] = out
        return out

    def host_tensor(self, offset: int, shape, dtype):
        """A torch CPU tensor viewing the host shm slot (made once per layout), or None without torch."""
        key = ("torch", offset, tuple(shape), np.dtype(dtype).str)
        out = self._views.get(key)
        if out is None:
            try:
                import torch
            except ImportError:
                return None
            out = self._views[key] = torch.from_numpy(self.view(offset, shape, dtype))
        return out

    def close(self) -> None:
        self._views.clear()
        self.memory.close()


def _inline_views(batch: Batch):
    """(image, [targets]) of an inline batch as torch CPU tensors viewing the received message's bytes (no copy;
    the batch owns them, nobody else holds a reference: writable in practice, so torch's warning is silenced)."""
    import warnings

    import torch

    def view(tensor, array):
        out = torch.from_numpy(array)
        return out.view(torch.bfloat16) if tensor.dtype == tensor_pb2.DTYPE_BFLOAT16 else out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return (view(batch.proto.image, batch.image),
                [view(t, a) for t, a in zip(batch.proto.targets, batch.targets)])


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "device")


def _torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


class PatchAugmenter:
    """Patch-mode augmentation through augmentd for a process on the server's host (see the module docstring).

    ``client``: an ``augmentd.Client``. ``config``: a patch-mode ``SessionConfig`` (``patch_session_config``); the
    augmenter opens the session from it — choosing the delivery (CUDA IPC on a CUDA session, host shm on the CPU;
    inline with ``inline=True``), ``depth`` input slots and ``depth + hold`` output slots — and closes it on
    ``close()``. ``depth``: batches that may be submitted and not yet taken (the server augments them while the
    trainer computes). ``start_batch_index``: the batch index of the first ``submit`` (each later one + 1;
    ``submit(..., batch_index=i)`` picks one: replaying an index reproduces its batch)."""

    def __init__(self, client, config: session_pb2.SessionConfig, depth: int = 2, hold: int = 1,
                 inline: bool = False, start_batch_index: int = 0, timeout: Optional[float] = None):
        if depth < 1 or hold < 0:
            raise ValueError("depth must be >= 1 and hold >= 0")
        if config.WhichOneof("mode") != "patch":
            raise ValueError("PatchAugmenter needs a patch-mode SessionConfig (augmentd.patch_session_config)")
        self.client = client
        self.depth, self.hold, self.inline = depth, hold, inline
        cfg = session_pb2.SessionConfig()
        cfg.CopyFrom(config)
        cfg.prefetch_depth = depth + hold
        if not inline:
            cfg.patch.input_slots = depth
        self._requested_delivery = cfg.delivery
        cuda_requested = cfg.device.startswith("cuda") or cfg.device.startswith("GPU-")
        chosen = cfg.delivery == server_info_pb2.DELIVERY_KIND_UNSPECIFIED
        if chosen:
            cfg.delivery = _INLINE if inline else (_CUDA_IPC if cuda_requested else _HOST_SHM)
        try:
            self.session: Session = client.open_session(cfg)
        except AugmentdError as err:
            # The server runs this pipeline on its CPU engine (no CUDA coverage): host shared memory instead.
            if not (chosen and cfg.delivery == _CUDA_IPC and err.code == grpc.StatusCode.INVALID_ARGUMENT
                    and "CUDA" in err.details):
                raise
            cfg.delivery = _HOST_SHM
            cfg.patch.input_slot_kind = _HOST_SHM
            self.session = client.open_session(cfg)
        self._inputs: List[_InputSlot] = []
        self._call = None
        self._reader = None
        try:
            self._setup(start_batch_index, timeout)
        except BaseException:
            self.close()
            raise

    def _setup(self, start_batch_index: int, timeout: Optional[float]) -> None:
        response = self.session.response
        # This process's name of the session's device ("cpu" or "cuda:N"): by UUID, ordinals differ between processes.
        self.device = "cpu"
        if response.device.name.startswith("cuda"):
            from .cuda_ipc import device_index_for_uuid

            index = device_index_for_uuid(response.device.uuid) if response.device.uuid else response.device.index
            self.device = f"cuda:{index}"
        cfg = self.session.config
        self.batch_size = cfg.batch_size
        self.patch_size = list(response.initial_patch_size)
        self.image_channels = cfg.patch.num_image_channels or 1
        self.seg_channels = cfg.patch.num_segmentation_channels or 1
        self.image_dtype = numpy_dtype(cfg.patch.input_image_dtype or tensor_pb2.DTYPE_FLOAT32)
        self.label_dtype = numpy_dtype(cfg.patch.input_label_dtype or tensor_pb2.DTYPE_INT16)
        self._image_proto_dtype = _FROM_NUMPY[np.dtype(self.image_dtype)]
        self._label_proto_dtype = _FROM_NUMPY[np.dtype(self.label_dtype)]
        for slot in response.input_slots:
            self._inputs.append(_InputSlot(slot))
        self._free: "queue.SimpleQueue" = queue.SimpleQueue()  # (slot index, SlotLease) the client may write
        self._room = threading.Semaphore(self.depth)        # submitted and not yet taken
        self._submit_lock = threading.Lock()                # request order = pending order
        self._take_lock = threading.Lock()                  # hold / credits bookkeeping
        self._pending: "collections.deque[PatchFuture]" = collections.deque()
        self._held: "collections.deque[Batch]" = collections.deque()
        self._indices = itertools.count(start_batch_index)
        self._requests: "queue.SimpleQueue" = queue.SimpleQueue()
        self._copy_streams = {}                             # torch device → CUDA stream for host → slot copies
        self._layouts = {}                                  # (slot index, ishape, sshape) → _Layout
        self._failure: Optional[BaseException] = None
        self._closed = False
        # Every credit up front: the server only produces submitted batches and at most `depth` are outstanding, so
        # credits bound nothing here; a taken result then sends at most a Release (none for inline delivery) and
        # the stream carries one request and one answer per batch (each message costs GIL time on gRPC's threads).
        start = batch_pb2.StreamStart(session_id=self.session.session_id, initial_credits=_ALL_CREDITS)
        token = getattr(self.session.response, "session_token", "")  # a server with session credentials
        if token and "session_token" in start.DESCRIPTOR.fields_by_name:
            start.session_token = token
        self._requests.put(batch_pb2.StreamBatchesRequest(start=start))
        stub = self.client.stub
        # The client's StreamPatchesDecoded stub takes pre-encoded requests (augmentd.wire.encode_stream_request).
        self._encoded = hasattr(stub, "StreamPatchesDecoded")
        # Inline batches go in PatchChunk messages of a few MB where the server takes them (issue 22).
        self._chunk = 0
        if self._encoded and not self._inputs and patch_chunk_bytes() > 0:
            try:
                if "patch_chunks" in self.client.server_info().features:
                    self._chunk = patch_chunk_bytes()
            except (grpc.RpcError, AugmentdError, AttributeError):
                pass  # an older server: one message per batch
        # Slot batches' torch views are looked up by the reader thread (cheap, cached per layout) when torch is there.
        self._prepare = self.session.slots is not None and _torch_available()
        self._call = getattr(stub, "StreamPatchesDecoded", stub.StreamPatches)(self._request_iter(), timeout=timeout)
        self._reader = threading.Thread(target=self._read, name=f"augmentd-patch-{self.session.session_id}",
                                        daemon=True)
        self._reader.start()
        target = getattr(self.client, "target", "")
        if isinstance(target, str) and target.startswith("unix:"):
            widen_unix_send_buffer(target)  # the channel may have reconnected since the Client made it

    # ---- stream plumbing ----
    def _request_iter(self):
        while True:
            item = self._requests.get()
            if item is _END:
                return
            yield item

    def _read(self) -> None:
        error: Optional[BaseException] = None
        try:
            for response in self._call:
                inline = None
                if isinstance(response, DecodedResponse):
                    response, inline = response.message, response.inline
                which = response.WhichOneof("msg")
                if which == "input_slots":
                    for lease in response.input_slots.leases:
                        self._free.put((lease.slot, lease))
                elif which == "batch":
                    batch = Batch(response.batch, self.session.slots, None, inline)
                    if self._prepare and response.batch.image.WhichOneof("storage") in ("host_shm", "cuda_ipc"):
                        try:
                            batch.torch()  # slot views (made once per layout) here, not on the caller's thread
                        except Exception:  # noqa: BLE001 (result() makes them again and raises)
                            pass
                    if response.batch.HasField("input_lease"):
                        lease = response.batch.input_lease
                        self._free.put((lease.slot, lease))
                    future = self._pending.popleft()
                    future.received_ns = time.time_ns()
                    future._set(batch=batch)
                elif which == "end":
                    break
        except grpc.RpcError as err:
            error = AugmentdError.from_rpc_error(err, "StreamPatches")
        except BaseException as err:  # noqa: BLE001 (handed to the waiting callers)
            error = err
        self._failure = error or AugmentdError(grpc.StatusCode.CANCELLED, "the patch stream ended", "StreamPatches")
        while self._pending:
            self._pending.popleft()._set(error=self._failure)
        for _ in range(max(1, len(self._inputs))):
            self._free.put(None)  # wakes submitters waiting for an input slot

    # ---- the API ----
    def _check(self, x, name: str, channels: int):
        shape = tuple(int(d) for d in x.shape)
        expected = (channels, *self.patch_size)
        if len(shape) != 2 + len(self.patch_size) or shape[1:] != expected or not 1 <= shape[0] <= self.batch_size:
            raise ValueError(f"{name}: shape {shape} does not fit the session's input (B <= {self.batch_size}, "
                             f"{', '.join(str(d) for d in expected)})")
        if _is_torch(x):
            dev = str(x.device)
            if x.is_cuda and (self.device == "cpu" or dev != self.device):
                raise ValueError(f"{name}: tensor is on {dev}, but the session runs on {self.device}")
            if not x.is_cuda and x.device.type != "cpu":
                raise ValueError(f"{name}: tensor is on {dev}, but the session runs on {self.device}")
        return shape

    def submit(self, image, segmentation, batch_index: Optional[int] = None) -> PatchFuture:
        """Sends one batch of (B, C, *initial_patch) ``image`` and (B, S, *initial_patch) ``segmentation`` (torch
        tensors on the session's device or the host, or numpy arrays); returns a ``PatchFuture``. Waits while
        ``depth`` batches are outstanding or no input slot is free."""
        submit_ns = time.time_ns()
        if self._closed:
            raise RuntimeError("the PatchAugmenter is closed")
        ishape = self._check(image, "image", self.image_channels)
        sshape = self._check(segmentation, "segmentation", self.seg_channels)
        if sshape[0] != ishape[0]:
            raise ValueError(f"segmentation: batch {sshape[0]} differs from image batch {ishape[0]}")
        self._room.acquire()
        try:
            with self._submit_lock:
                if self._failure is not None:
                    raise self._failure
                index = next(self._indices) if batch_index is None else batch_index
                if self._inputs:
                    item = self._free.get()
                    if item is None:
                        raise self._failure or RuntimeError("the patch stream ended")
                    message = self._fill(item, image, segmentation, ishape, sshape, index)
                elif self._encoded:
                    # Inline bytes, copied once: from the arrays straight into the message (augmentd.wire).
                    request = batch_pb2.AugmentRequest(session_id=self.session.session_id, batch_index=index)
                    arrays = (self._host(image, self.image_dtype), self._host(segmentation, self.label_dtype))
                    heads = tuple(tensor_pb2.Tensor(name=n, dtype=d, shape=a.shape) for n, d, a in
                                  (("image", self._image_proto_dtype, arrays[0]),
                                   ("segmentation", self._label_proto_dtype, arrays[1])))
                    encoded = EncodedRequest(request, heads, arrays)
                    if self._chunk and arrays[0].nbytes + arrays[1].nbytes >= _CHUNK_MIN:
                        message = encode_chunked_request(encoded, self._chunk)
                    else:
                        message = encode_stream_request(encoded)
                else:
                    request = batch_pb2.AugmentRequest(session_id=self.session.session_id, batch_index=index)
                    request.image.CopyFrom(from_numpy(self._host(image, self.image_dtype), "image"))
                    request.segmentation.CopyFrom(from_numpy(self._host(segmentation, self.label_dtype),
                                                             "segmentation"))
                    message = batch_pb2.StreamBatchesRequest(patches=request)
                future = PatchFuture(self, index, submit_ns)
                self._pending.append(future)
                future.sent_ns = time.time_ns()
                if isinstance(message, list):  # a chunked batch: its messages in order (we hold the submit lock)
                    for m in message:
                        self._requests.put(m)
                else:
                    self._requests.put(message)
                return future
        except BaseException:
            self._room.release()
            raise

    @staticmethod
    def _host(x, dtype) -> np.ndarray:
        if _is_torch(x):
            x = x.detach().cpu().numpy()
        return np.ascontiguousarray(x, dtype=dtype)

    def _layout(self, index: int, slot: _InputSlot, ishape, sshape) -> _Layout:
        key = (index, ishape, sshape)
        lay = self._layouts.get(key)
        if lay is not None:
            return lay
        lay = _Layout()
        lay.ibytes = math.prod(ishape) * np.dtype(self.image_dtype).itemsize
        lay.soff = _align256(lay.ibytes)
        lay.sbytes = math.prod(sshape) * np.dtype(self.label_dtype).itemsize
        if lay.soff + lay.sbytes > slot.byte_size:
            raise ValueError(f"image/segmentation: {lay.soff + lay.sbytes} bytes do not fit input slot {slot.name!r} "
                             f"of {slot.byte_size} bytes")
        lay.iview = slot.view(0, ishape, self.image_dtype)
        lay.sview = slot.view(lay.soff, sshape, self.label_dtype)
        lay.ihost = lay.shost = None
        if slot.kind == "host_shm":
            lay.ihost = slot.host_tensor(0, ishape, self.image_dtype)
            lay.shost = slot.host_tensor(lay.soff, sshape, self.label_dtype)
        ref = "cuda_ipc" if slot.kind == "cuda_ipc" else "host_shm"
        request = batch_pb2.AugmentRequest(session_id=self.session.session_id)
        for t, name, shape, dtype, off, nbytes in ((request.image, "image", ishape, self._image_proto_dtype, 0,
                                                    lay.ibytes),
                                                   (request.segmentation, "segmentation", sshape,
                                                    self._label_proto_dtype, lay.soff, lay.sbytes)):
            t.name, t.dtype = name, dtype
            t.shape.extend(shape)
            r = getattr(t, ref)
            r.region, r.offset, r.byte_size = slot.name, off, nbytes
        lay.template = request
        lay.constant = request.SerializeToString()
        self._layouts[key] = lay
        return lay

    def _fill(self, item, image, seg, ishape, sshape, batch_index: int):
        """Copies image and seg into the free input slot ``item`` and returns the StreamPatches request naming it
        (wire bytes for the encoded stub: the constant part is serialized once per slot and layout)."""
        index, lease = item
        slot = self._inputs[index]
        try:
            lay = self._layout(index, slot, ishape, sshape)
        except ValueError:
            self._free.put(item)
            raise
        if slot.kind == "cuda_ipc":
            import torch

            dev = slot.memory.device
            if _is_torch(image) and image.is_cuda and _is_torch(seg) and seg.is_cuda:
                # Device to device on the caller's current stream of the slot's device (copy_ runs there without a
                # stream or device context): after the kernels that produced the tensors.
                stream = torch.cuda.current_stream(dev)
                lay.iview.copy_(image)
                lay.sview.copy_(seg)
            else:
                if any(_is_torch(x) and x.is_cuda for x in (image, seg)):
                    stream = torch.cuda.current_stream(dev)  # one of them on the device: the caller's stream
                else:
                    # Host to device on the augmenter's own stream, not behind the caller's queued work: a training
                    # step on the default stream would otherwise hold every hand-over of a loader thread until it ends.
                    stream = self._copy_streams.get(dev)
                    if stream is None:
                        stream = self._copy_streams[dev] = torch.cuda.Stream(dev)
                with torch.cuda.device(dev), torch.cuda.stream(stream):
                    lay.iview.copy_(image if _is_torch(image) else torch.from_numpy(np.ascontiguousarray(image)))
                    lay.sview.copy_(seg if _is_torch(seg) else torch.from_numpy(np.ascontiguousarray(seg)))
            # The server reads the slot on its own stream after waiting on the slot's event (CudaIpcRegion.event_handle:
            # the writer records it after each write), so a device-to-device copy need not finish before the lease
            # goes out; without an event the copies must be finished when the lease arrives.
            if stream.cuda_stream == 0 and torch.cuda.current_device() != slot.memory.device_index:
                with torch.cuda.device(dev):  # the legacy default stream is the current device's
                    recorded = slot.memory.record(stream)
            else:
                recorded = slot.memory.record(stream)
            if not recorded:
                stream.synchronize()
        else:
            for view, host, src in ((lay.iview, lay.ihost, image), (lay.sview, lay.shost, seg)):
                if _is_torch(src) and src.is_cuda:
                    host.copy_(src)  # one device-to-host copy into the slot
                else:
                    _parallel_copyto(view, src.detach().numpy() if _is_torch(src) else src)
        if self._encoded:
            return patch_request_bytes(lay.constant, batch_index, lease.SerializeToString())
        request = batch_pb2.AugmentRequest()
        request.CopyFrom(lay.template)
        request.batch_index = batch_index
        request.input_slot.CopyFrom(lease)
        return batch_pb2.StreamBatchesRequest(patches=request)

    def result(self, future: PatchFuture, timeout: Optional[float] = None,
               copy: bool = False) -> Tuple[object, List[object]]:
        """(image, [targets]) of a submitted batch as torch tensors — on the session's GPU with CUDA IPC delivery (the
        default on a CUDA session), host tensors with host shm / inline delivery — viewing the output slot (see the
        lifetime rule of the module docstring), or clones of them with ``copy=True`` (the slot goes back at once). Raises
        ``AugmentdError`` when the server refused the batch (naming the field) or the stream ended."""
        if future.taken:
            raise ValueError(f"the result of batch {future.batch_index} was already taken")
        if not future._done.wait(timeout):
            raise TimeoutError(f"batch {future.batch_index} not ready after {timeout} s")
        future.taken = True
        self._room.release()
        if future._error is not None:
            raise future._error
        batch = future._batch
        if batch.proto.image.WhichOneof("storage") == "inline_data":
            image, targets = _inline_views(batch)  # views of the received message: the output is written once
        else:
            image, targets = batch.torch()  # CUDA_IPC: on the session's GPU; HOST_SHM: host tensors of the slot
        if copy:
            image, targets = image.clone(), [t.clone() for t in targets]
        releases = []
        with self._take_lock:
            if batch.lease is not None:
                if copy:
                    batch.released = True
                    releases.append(batch.lease)
                else:
                    self._held.append(batch)
                while len(self._held) > self.hold:
                    old = self._held.popleft()
                    old.released = True
                    releases.append(old.lease)
            if releases and not self._closed:
                self._requests.put(release_request_bytes(releases) if self._encoded else
                                   batch_pb2.StreamBatchesRequest(release=batch_pb2.Release(leases=releases)))
        future.returned_ns = time.time_ns()
        return image, targets

    def __call__(self, image, segmentation, batch_index: Optional[int] = None):
        """``result(submit(image, segmentation))``: the augmented (image, [targets])."""
        return self.result(self.submit(image, segmentation, batch_index))

    @property
    def input_slots(self) -> int:
        return len(self._inputs)

    def close(self):
        """Ends the stream (every held slot goes back) and closes the session; returns its final SessionStats (None
        when it was closed already). Views of slots must not be used afterwards."""
        self._closed = True
        if self._call is not None:
            self._requests.put(_END)
            self._call.cancel()
            self._reader.join(timeout=10)
            self._call = None
        if hasattr(self, "_held"):
            self._held.clear()
        if hasattr(self, "_layouts"):
            self._layouts.clear()  # their views of the input slots go first
        for slot in self._inputs:
            slot.close()
        self._inputs = []
        stats = None
        if self.session is not None:
            try:
                stats = self.client.close_session(self.session)
            except AugmentdError:
                pass  # already closed (e.g. the server drained)
            self.session = None
        return stats

    def __enter__(self) -> "PatchAugmenter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["PatchAugmenter", "PatchFuture"]
