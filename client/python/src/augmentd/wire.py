"""StreamBatches responses decoded without copying inline tensor bytes.

gRPC hands the deserializer one ``bytes`` object per message. Parsing it with protobuf copies every inline tensor
into the message, and reading ``Tensor.inline_data`` copies it again into a new ``bytes``; for a 13 MB batch that
is two extra passes over memory per batch. ``decode_stream_response`` instead walks the wire format of
``StreamBatchesResponse.batch.{image,targets}.inline_data`` (fields 1 → 3/4 → 4), parses everything else with
protobuf (a few hundred bytes: the ``inline_data`` fields are kept, empty, so ``WhichOneof("storage")`` still
says ``"inline_data"``) and returns ``memoryview`` slices of the received bytes for the data, which
``numpy.frombuffer`` views without a copy (read-only, as before).
"""
from __future__ import annotations

from typing import List, Optional, Tuple

from augmentd.v1 import batch_pb2

_LEN = 2  # wire type of length-delimited fields


def decode_varint(buf, i: int) -> Tuple[int, int]:
    """(value, index after it) of the protobuf varint at buf[i]."""
    value, shift = 0, 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def encode_varint(n: int) -> bytes:
    """The protobuf varint encoding of n >= 0."""
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _skip(buf, i: int, wire: int) -> int:
    if wire == 0:
        return decode_varint(buf, i)[1]
    if wire == 1:
        return i + 8
    if wire == _LEN:
        n, i = decode_varint(buf, i)
        return i + n
    if wire == 5:
        return i + 4
    raise ValueError(f"unsupported wire type {wire} in a StreamBatchesResponse")


def _strip(buf, start: int, end: int, path, views: dict, where: tuple = ()) -> bytes:
    """The message buf[start:end] with the length-delimited fields on ``path`` rewritten: ``path`` maps a field
    number to (the path inside it, or None for a leaf whose bytes go to ``views`` and become empty; whether the
    field is repeated). Views are keyed by the (field, occurrence) pairs leading to them; a non-repeated field
    seen twice (protobuf would merge the occurrences) raises _Merged."""
    out: List[bytes] = []
    seen: dict = {}
    i = start
    while i < end:
        field_start = i
        key, i = decode_varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire != _LEN or field not in path:
            i = _skip(buf, i, wire)
            out.append(buf[field_start:i])
            continue
        n, i = decode_varint(buf, i)
        inner, repeated = path[field]
        occurrence = seen.get(field, 0)
        seen[field] = occurrence + 1
        if occurrence > 0 and not repeated:
            raise _Merged()
        if inner is None:
            views[where] = buf[i:i + n]
            out.append(encode_varint(key) + b"\x00")
        else:
            body = _strip(buf, i, i + n, inner, views, where + ((field, occurrence),))
            out.append(encode_varint(key) + encode_varint(len(body)) + body)
        i += n
    if i != end:
        raise ValueError("truncated StreamBatchesResponse")
    return b"".join(bytes(p) for p in out)


_SMALL = 64 << 10


class _Merged(Exception):
    pass


_TENSOR = {4: (None, False)}                         # Tensor.inline_data
_BATCH = {3: (_TENSOR, False), 4: (_TENSOR, True)}   # Batch.image, Batch.targets
_RESPONSE = {1: (_BATCH, False)}                     # StreamBatchesResponse.batch


class DecodedResponse:
    """A ``StreamBatchesResponse`` (``message``) whose inline tensor bytes are in ``inline``: views of the received
    bytes (the image, then the targets in order), each None where that tensor is not inline."""

    __slots__ = ("message", "inline")

    def __init__(self, message: batch_pb2.StreamBatchesResponse, inline: Optional[List[Optional[memoryview]]]):
        self.message = message
        self.inline = inline


def decode_stream_response(data: bytes) -> DecodedResponse:
    """gRPC response deserializer of StreamBatches (see the module docstring)."""
    if len(data) < _SMALL:  # slot batches, end messages, tiny patches: protobuf is faster than walking in Python
        return DecodedResponse(batch_pb2.StreamBatchesResponse.FromString(data), None)
    raw = memoryview(data)
    leaves: dict = {}
    try:
        stripped = _strip(raw, 0, len(raw), _RESPONSE, leaves)
    except _Merged:  # augmentd never sends that: let protobuf merge
        return DecodedResponse(batch_pb2.StreamBatchesResponse.FromString(data), None)
    message = batch_pb2.StreamBatchesResponse.FromString(stripped)
    if not leaves:
        return DecodedResponse(message, None)
    # Keys: ((1, 0), (3, 0)) for the image, ((1, 0), (4, k)) for target k.
    inline = [leaves.get(((1, 0), (3, 0)))]
    inline += [leaves.get(((1, 0), (4, j))) for j in range(len(message.batch.targets))]
    return DecodedResponse(message, inline)


class EncodedRequest:
    """A ``StreamBatchesRequest`` carrying ``patches`` with inline tensors, serialized with one copy of the tensor
    bytes (``encode_stream_request``): ``request`` is the AugmentRequest without image and segmentation,
    ``tensors`` their Tensor messages without ``inline_data`` (name, dtype, shape) and ``arrays`` the C-contiguous
    little-endian numpy arrays whose bytes become their ``inline_data``."""

    __slots__ = ("request", "tensors", "arrays")

    def __init__(self, request: batch_pb2.AugmentRequest, tensors, arrays):
        self.request = request
        self.tensors = tensors
        self.arrays = arrays


def _len_field(number: int, length: int) -> bytes:
    return encode_varint((number << 3) | _LEN) + encode_varint(length)


def _expected_bytes(tensor) -> int:
    import numpy as np

    from .tensors import numpy_dtype

    n = 1
    for d in tensor.shape:
        n *= d
    return n * np.dtype(numpy_dtype(tensor.dtype)).itemsize


def encode_stream_request(message) -> bytes:
    """gRPC request serializer of StreamPatches: protobuf messages as usual, bytes as they are; an
    ``EncodedRequest`` as the same
    wire bytes protobuf would write (StreamBatchesRequest.patches = 4 → AugmentRequest.image = 3 / segmentation = 4
    → Tensor.inline_data = 4), but its tensor data is copied once, straight from the arrays into the message,
    instead of tobytes → CopyFrom → the oneof's copy → SerializeToString (four passes over a 100 MB batch)."""
    if isinstance(message, (bytes, bytearray)):  # already encoded (PatchAugmenter.submit encodes on its thread)
        return message
    if not isinstance(message, EncodedRequest):
        return message.SerializeToString()
    parts = [message.request.SerializeToString()]
    for field, tensor, array in zip((3, 4), message.tensors, message.arrays):
        head = tensor.SerializeToString()  # name, dtype, shape; inline_data follows (fields may come in any order)
        data = memoryview(array)
        if not data.c_contiguous:
            raise ValueError(f"{tensor.name}: the array is not C-contiguous (np.ascontiguousarray it)")
        data = data.cast("B")
        expected = _expected_bytes(tensor)
        if data.nbytes != expected:
            raise ValueError(f"{tensor.name}.inline_data: {data.nbytes} bytes, but shape {list(tensor.shape)} of "
                             f"dtype {tensor.dtype} takes {expected}")
        body_head = head + _len_field(4, data.nbytes)
        parts += [_len_field(field, len(body_head) + data.nbytes), body_head, data]
    body = sum(len(p) if isinstance(p, bytes) else p.nbytes for p in parts)
    return b"".join([_len_field(4, body)] + parts)


# ---- the process's allocator, for messages of many MB ----
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
_LARGE = 256 << 20
_malloc_tuned: Optional[bool] = None


def tune_malloc() -> bool:
    """Makes glibc's malloc keep the buffers of large gRPC messages instead of mapping fresh pages for each.

    Every inline message of tens of MB is allocated twice on this side (the serialized bytes, gRPC's copy into its
    slice; the received message on the way back). glibc serves anything above 32 MB — and, on a thread's own arena,
    anything above 64 MB — with a fresh mmap that is unmapped on free, so every message page-faults its way through
    all of its pages: on the 2-core development VM 35 ms of a 40 ms encoding of 103 MB, ~2/3 of the gRPC transport
    (bench/results/2026-12-01-patch-inline-cpu.md). This sets malloc's mmap and trim thresholds to 256 MiB and its
    arena count to 1 (gRPC's threads then allocate from the main heap, where freed buffers are reused warm). The arena
    count only takes effect before the process's second thread allocates: the earlier the better (``augmentd.Client``
    calls it on construction; ``MALLOC_ARENA_MAX=1`` in the environment does the same from the start). The cost: up to
    256 MiB of freed heap stays mapped. No-op (False) off glibc or when ``AUGMENTD_MALLOC_TUNING=0``; idempotent."""
    global _malloc_tuned
    if _malloc_tuned is not None:
        return _malloc_tuned
    _malloc_tuned = False
    import os

    if os.environ.get("AUGMENTD_MALLOC_TUNING", "1") == "0":
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False  # not glibc (musl, macOS)
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    ok = mallopt(_M_MMAP_THRESHOLD, _LARGE) == 1 and mallopt(_M_TRIM_THRESHOLD, _LARGE) == 1
    if "MALLOC_ARENA_MAX" not in os.environ:
        ok = mallopt(_M_ARENA_MAX, 1) == 1 and ok
    _malloc_tuned = ok
    return ok
