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

import os
import threading
from typing import List, Optional, Tuple

import numpy as np

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


def _array_bytes(tensor, array) -> memoryview:
    """The array's bytes as a flat view, checked: C-contiguous, exactly the size `tensor`'s shape and dtype take."""
    data = memoryview(array)
    if not data.c_contiguous:
        raise ValueError(f"{tensor.name}: the array is not C-contiguous (np.ascontiguousarray it)")
    data = data.cast("B") if data.nbytes else memoryview(b"")  # cast refuses shapes with a zero
    expected = _expected_bytes(tensor)
    if data.nbytes != expected:
        raise ValueError(f"{tensor.name}.inline_data: {data.nbytes} bytes, but shape {list(tensor.shape)} of "
                         f"dtype {tensor.dtype} takes {expected}")
    return data


def encode_stream_request(message) -> bytes:
    """gRPC request serializer of StreamPatches: protobuf messages as usual, bytes as they are; an
    ``EncodedRequest`` as the same
    wire bytes protobuf would write (StreamBatchesRequest.patches = 4 → AugmentRequest.image = 3 / segmentation = 4
    → Tensor.inline_data = 4), but its tensor data is copied once, straight from the arrays into the message,
    instead of tobytes → CopyFrom → the oneof's copy → SerializeToString (four passes over a 100 MB batch). On
    CPython the message is an uninitialised ``bytes`` of its final size that the framing and the arrays are
    written into, the large arrays in chunks on a few threads (``_parallel_copyto``: one thread
    moves ~5-10 GB/s, 10-20 ms for a 128³ B=2 request); elsewhere the parts are joined."""
    if isinstance(message, (bytes, bytearray)):  # already encoded (PatchAugmenter.submit encodes on its thread)
        return message
    if not isinstance(message, EncodedRequest):
        return message.SerializeToString()
    parts = [message.request.SerializeToString()]
    for field, tensor, array in zip((3, 4), message.tensors, message.arrays):
        head = tensor.SerializeToString()  # name, dtype, shape; inline_data follows (fields may come in any order)
        data = _array_bytes(tensor, array)
        body_head = head + _len_field(4, data.nbytes)
        parts += [_len_field(field, len(body_head) + data.nbytes), body_head, data]
    body = sum(len(p) if isinstance(p, bytes) else p.nbytes for p in parts)
    parts.insert(0, _len_field(4, body))
    total = body + len(parts[0])
    out = _uninitialised_bytes(total) if total >= _DIRECT else None
    if out is None:
        return b"".join(parts)
    message_bytes, dst = out
    import numpy as np

    at = 0
    for p in parts:
        n = len(p) if isinstance(p, bytes) else p.nbytes
        if n:
            _parallel_copyto(dst[at:at + n], np.frombuffer(p, np.uint8))
        at += n
    return message_bytes


PATCH_CHUNK = 4 << 20  # bytes of inline data per PatchChunk message (AUGMENTD_PATCH_CHUNK overrides; 0: one message)
_CHUNK_MIN = 8 << 20   # below this much inline data one message is as fast


def patch_chunk_bytes() -> int:
    """Inline bytes per StreamPatches chunk message: ``AUGMENTD_PATCH_CHUNK`` (0 = never chunk) or PATCH_CHUNK."""
    return int(os.environ.get("AUGMENTD_PATCH_CHUNK", PATCH_CHUNK))


def encode_chunked_request(message: "EncodedRequest", chunk: int) -> List[bytes]:
    """The wire bytes of a StreamPatches batch sent in pieces (issue 22): first ``patches`` with
    ``AugmentRequest.chunked_bytes`` and empty ``inline_data``, then ``StreamBatchesRequest.chunk`` = 5 messages
    (PatchChunk: offset = 1, data = 2) of ``chunk`` bytes each (the last one shorter) of the image's bytes followed
    by the segmentation's. gRPC then moves many messages of a few MB instead of one of ~100 MB, and the server copies
    each into the batch's buffer as it arrives, while the next is in flight. The data is copied once, from the
    arrays straight into the messages (written in place on CPython, chunks on the copy threads as
    ``encode_stream_request`` does). Needs a server with ServerInfo.features "patch_chunks"."""
    if chunk <= 0:
        raise ValueError("chunk must be > 0")
    datas = [_array_bytes(t, a) for t, a in zip(message.tensors, message.arrays)]
    total = sum(d.nbytes for d in datas)
    request = batch_pb2.AugmentRequest()
    request.CopyFrom(message.request)
    request.chunked_bytes = total
    for field, tensor in zip((request.image, request.segmentation), message.tensors):
        field.CopyFrom(tensor)
        field.inline_data = b""
    out = [batch_pb2.StreamBatchesRequest(patches=request).SerializeToString()]
    import numpy as np

    flat = [np.frombuffer(d, np.uint8) for d in datas]
    bounds = [0, datas[0].nbytes, total]
    copies = []
    for offset in range(0, total, chunk):
        n = min(chunk, total - offset)
        body = b"\x08" + encode_varint(offset) + _len_field(2, n)
        head = _len_field(5, len(body) + n) + body
        made = _uninitialised_bytes(len(head) + n)
        pieces = []  # (destination start in the chunk's data, source array, source start, length)
        for k in range(2):
            lo, hi = max(offset, bounds[k]), min(offset + n, bounds[k + 1])
            if lo < hi:
                pieces.append((lo - offset, flat[k], lo - bounds[k], hi - lo))
        if made is None:
            out.append(head + b"".join(bytes(src[s:s + m]) for _, src, s, m in pieces))
            continue
        data, view = made
        view[:len(head)] = np.frombuffer(head, np.uint8)
        for at, src, s, m in pieces:
            copies.append((view[len(head) + at:len(head) + at + m], src[s:s + m]))
        out.append(data)
    _copy_all(copies)
    return out


def _copy_all(copies) -> None:
    """np.copyto of each (dst, src) pair, on the copy threads when there are several (numpy releases the GIL)."""
    if _copy_threads() == 1 or len(copies) < 2:
        for d, s in copies:
            np.copyto(d, s)
        return
    pool = _pool()
    for f in [pool.submit(np.copyto, d, s) for d, s in copies[1:]] + [None]:
        if f is None:
            np.copyto(*copies[0])
        else:
            f.result()


_COPY_CHUNK = 4 << 20  # bytes per copy task
_copy_pool = None
_copy_pool_lock = threading.Lock()


_THREADS = max(1, min(8, (os.cpu_count() or 1) // 2))


def _copy_threads() -> int:
    return _THREADS


def _pool():
    global _copy_pool
    with _copy_pool_lock:
        if _copy_pool is None:
            from concurrent.futures import ThreadPoolExecutor

            _copy_pool = ThreadPoolExecutor(_copy_threads(), thread_name_prefix="augmentd-copy")
    return _copy_pool


def _parallel_copyto(dst: np.ndarray, src) -> None:
    """``np.copyto(dst, src, casting="unsafe")`` of a large contiguous array in chunks on a few threads (numpy
    releases the GIL while copying): one thread moves ~5-10 GB/s, i.e. 10-20 ms for a 128³ B=2 batch (issue 22).
    Small or strided sources are copied on the calling thread. Threads that block rather than spin, so a loaded
    host does not make it slower than one copy (torch's intra-op copy does there)."""
    if dst.nbytes < 2 * _COPY_CHUNK:
        np.copyto(dst, src, casting="unsafe")
        return
    src = np.asarray(src)
    threads = _copy_threads()
    if threads == 1 or not src.flags.c_contiguous or src.shape != dst.shape:
        np.copyto(dst, src, casting="unsafe")
        return
    _pool()
    d, s = dst.reshape(-1), src.reshape(-1)
    step = max(_COPY_CHUNK // dst.itemsize, -(-d.size // threads))
    parts = [(i, min(i + step, d.size)) for i in range(0, d.size, step)]
    futures = [_copy_pool.submit(np.copyto, d[a:b], s[a:b], casting="unsafe") for a, b in parts[1:]]
    np.copyto(d[parts[0][0]:parts[0][1]], s[parts[0][0]:parts[0][1]], casting="unsafe")
    for f in futures:
        f.result()


_DIRECT = 1 << 20  # below this, b"".join is as fast
_new_bytes = None


def _uninitialised_bytes(n: int):
    """(a ``bytes`` of n bytes whose contents are not yet written, a writable uint8 numpy view of them), or None
    off CPython. Only for building a message nobody else has seen yet (bytes are immutable once shared: not
    hashed, not interned here). PyBytes_FromStringAndSize(NULL, n) is CPython's own way of making one to fill."""
    global _new_bytes
    if _new_bytes is None:
        import platform

        _new_bytes = False
        if platform.python_implementation() == "CPython":
            import ctypes

            make = ctypes.pythonapi.PyBytes_FromStringAndSize
            make.restype, make.argtypes = ctypes.py_object, (ctypes.c_void_p, ctypes.c_ssize_t)
            address = ctypes.pythonapi.PyBytes_AsString
            address.restype, address.argtypes = ctypes.c_void_p, (ctypes.py_object,)
            _new_bytes = (make, address, ctypes)
    if not _new_bytes:
        return None
    import numpy as np

    make, address, ctypes = _new_bytes
    out = make(None, n)
    view = np.frombuffer((ctypes.c_uint8 * n).from_address(address(out)), np.uint8)
    return out, view


# ---- the kernel's socket buffers of a same-host (unix socket) connection ----
UNIX_SEND_BUFFER = 8 << 20


def widen_unix_send_buffer(target: str, size: Optional[int] = None) -> int:
    """Asks for ``size`` bytes (default ``UNIX_SEND_BUFFER``; ``AUGMENTD_UNIX_SNDBUF`` in the environment overrides,
    0 turns it off) of SO_SNDBUF / SO_RCVBUF on this process's unix sockets connected to ``target``
    (``unix:///path`` or a path); returns how many it found. gRPC Python has no socket option for it, so the
    connected sockets are found in /proc/self/fd (Linux; elsewhere 0) and set through a duplicate descriptor.

    A unix stream socket holds at most its sender's SO_SNDBUF (208 KiB by default): an inline request of ~100 MB
    then crosses in ~470 rounds of "write until EAGAIN, the server's poller wakes and reads, the client's poller
    wakes", and a larger buffer means fewer rounds (~15 % off the request phase of a 103 MB patch batch on the
    development VM, bench/results/2026-12-01-patch-inline-transport-cpu.md). The kernel caps it at
    net.core.wmem_max. The buffer only takes memory while data waits in it. A reconnected channel has new sockets
    with the defaults again: ``augmentd.Client`` calls this when its channel is ready and ``PatchAugmenter`` when
    its stream starts."""
    import os
    import socket

    if size is None:
        size = int(os.environ.get("AUGMENTD_UNIX_SNDBUF", UNIX_SEND_BUFFER))
    path = target[len("unix:"):] if target.startswith("unix:") else target
    if size <= 0 or not path or not os.path.isdir("/proc/self/fd"):
        return 0
    path = os.path.normpath("/" + path.lstrip("/"))
    found = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            fd = int(name)
            if not os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                continue
            sock = socket.socket(fileno=os.dup(fd))
        except (OSError, ValueError):
            continue  # closed meanwhile, or not a socket
        try:
            if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
                continue
            peer = sock.getpeername()  # gRPC connects to "///path": normalised as the target's path
            if not isinstance(peer, str) or not peer or os.path.normpath("/" + peer.lstrip("/")) != path:
                continue
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) < size:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)
            found += 1
        except OSError:
            pass  # not connected (a listener), or the option was refused: the defaults stay
        finally:
            sock.close()  # the duplicate only; gRPC's descriptor stays open
    return found


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
