"""augmentd.wire: StreamBatchesResponse decoding that keeps inline tensor bytes as views (no server needed)."""
import numpy as np
import pytest

import augmentd_server  # noqa: F401  (puts the client package on sys.path)
from augmentd.sessions import Batch
from augmentd.tensors import from_numpy
from augmentd.v1 import batch_pb2, tensor_pb2
from augmentd.wire import decode_stream_response


def _response(rng, image_inline=True):
    image = rng.standard_normal((2, 1, 40, 41, 42)).astype(np.float16)
    targets = [rng.integers(-1, 3, (2, 1, 40 // s, 41 // s, 42 // s)).astype(np.int8) for s in (1, 2, 4)]
    r = batch_pb2.StreamBatchesResponse()
    r.batch.session_id = "s1"
    r.batch.batch_index = 7
    if image_inline:
        r.batch.image.CopyFrom(from_numpy(image, "image"))
    else:
        r.batch.image.CopyFrom(tensor_pb2.Tensor(name="image", dtype=tensor_pb2.DTYPE_FLOAT16, shape=image.shape,
                                                 host_shm=tensor_pb2.HostShmRef(region="slot0", offset=0,
                                                                                byte_size=image.nbytes)))
    for k, t in enumerate(targets):
        r.batch.targets.append(from_numpy(t, f"target_{k}"))
    r.batch.samples.add(sample_index=14, case_id="c0", bbox_lower=[-3, 4, 5])
    r.batch.timing.sent_unix_ns = 1234567890123
    return r, image, targets


def test_inline_bytes_become_views_and_the_rest_is_parsed():
    r, image, targets = _response(np.random.default_rng(0))
    raw = r.SerializeToString()
    d = decode_stream_response(raw)
    expected = batch_pb2.StreamBatchesResponse()
    expected.CopyFrom(r)
    expected.batch.image.inline_data = b""
    for t in expected.batch.targets:
        t.inline_data = b""
    assert d.message == expected  # every other field, and the oneof still says inline_data
    assert d.message.batch.image.WhichOneof("storage") == "inline_data"
    assert all(isinstance(v, memoryview) and v.obj is raw for v in d.inline)  # views of the received bytes
    batch = Batch(d.message.batch, inline=d.inline)
    np.testing.assert_array_equal(batch.image, image)
    for got, want in zip(batch.targets, targets):
        np.testing.assert_array_equal(got, want)
    torch = pytest.importorskip("torch")
    img, tg = batch.torch()
    assert img.dtype == torch.float16 and torch.equal(tg[2], torch.from_numpy(targets[2]))


def test_tensors_that_are_not_inline_and_end_messages():
    r, _, targets = _response(np.random.default_rng(1), image_inline=False)
    d = decode_stream_response(r.SerializeToString())
    assert d.inline[0] is None and d.message.batch.image.host_shm.region == "slot0"
    np.testing.assert_array_equal(np.frombuffer(d.inline[2], np.int8).reshape(targets[1].shape), targets[1])
    end = batch_pb2.StreamBatchesResponse(end=batch_pb2.StreamEnd(next_batch_index=5, reason="client finished"))
    d = decode_stream_response(end.SerializeToString())
    assert d.message == end and d.inline is None


def test_a_batch_field_sent_twice_is_left_to_protobuf():
    r, image, _ = _response(np.random.default_rng(2))
    raw = r.SerializeToString() + batch_pb2.StreamBatchesResponse(batch=batch_pb2.Batch(batch_index=9)).SerializeToString()
    d = decode_stream_response(raw)
    assert d.inline is None and d.message == batch_pb2.StreamBatchesResponse.FromString(raw)
    assert d.message.batch.batch_index == 9 and len(d.message.batch.image.inline_data) == image.nbytes


def test_small_messages_are_parsed_by_protobuf():
    r = batch_pb2.StreamBatchesResponse()
    r.batch.image.CopyFrom(from_numpy(np.ones((1, 1, 4, 4, 4), np.float16), "image"))
    d = decode_stream_response(r.SerializeToString())
    assert d.inline is None and d.message == r
    np.testing.assert_array_equal(Batch(d.message.batch, inline=d.inline).image, np.ones((1, 1, 4, 4, 4)))


def test_truncated_messages_are_rejected():
    r, _, _ = _response(np.random.default_rng(3))
    with pytest.raises((ValueError, IndexError)):
        decode_stream_response(r.SerializeToString()[:-5])


def test_encoded_requests_are_protobufs_bytes():
    from augmentd.wire import EncodedRequest, encode_stream_request

    rng = np.random.default_rng(3)
    for image, seg in ((rng.standard_normal((2, 1, 30, 31, 32)).astype(np.float32),
                        rng.integers(0, 3, (2, 1, 30, 31, 32)).astype(np.int16)),
                       (rng.standard_normal((1, 2, 3, 4, 5)).astype(np.float16),
                        rng.integers(0, 3, (1, 1, 3, 4, 5)).astype(np.int8))):
        request = batch_pb2.AugmentRequest(session_id="s9", batch_index=300)
        heads = (tensor_pb2.Tensor(name="image", dtype=from_numpy(image).dtype, shape=image.shape),
                 tensor_pb2.Tensor(name="segmentation", dtype=from_numpy(seg).dtype, shape=seg.shape))
        data = encode_stream_request(EncodedRequest(request, heads, (image, seg)))
        full = batch_pb2.AugmentRequest(session_id="s9", batch_index=300, image=from_numpy(image, "image"),
                                        segmentation=from_numpy(seg, "segmentation"))
        assert data == batch_pb2.StreamBatchesRequest(patches=full).SerializeToString()
    credit = batch_pb2.StreamBatchesRequest(credit=batch_pb2.Credit(credits=2))
    assert encode_stream_request(credit) == credit.SerializeToString()
    assert encode_stream_request(b"\x0a\x00") == b"\x0a\x00"


def _encode_both_ways(image, seg, image_dtype=None):
    """(augmentd.wire's bytes, protobuf's bytes) of one StreamPatches request carrying image and seg inline."""
    from augmentd.wire import EncodedRequest, encode_stream_request

    request = batch_pb2.AugmentRequest(session_id="s9-direct", batch_index=2 ** 40 + 3)
    dtype = image_dtype if image_dtype is not None else from_numpy(image).dtype
    heads = (tensor_pb2.Tensor(name="image", dtype=dtype, shape=image.shape),
             tensor_pb2.Tensor(name="segmentation", dtype=from_numpy(seg).dtype, shape=seg.shape))
    data = encode_stream_request(EncodedRequest(request, heads, (image, seg)))
    full = batch_pb2.AugmentRequest()
    full.CopyFrom(request)
    full.image.CopyFrom(tensor_pb2.Tensor(name="image", dtype=dtype, shape=image.shape, inline_data=image.tobytes()))
    full.segmentation.CopyFrom(from_numpy(seg, "segmentation"))
    return data, batch_pb2.StreamBatchesRequest(patches=full).SerializeToString()


def test_large_requests_are_written_straight_into_their_bytes(monkeypatch):
    """Above 1 MiB the request is an uninitialised bytes object filled in place, the arrays in chunks on 4 threads:
    the same bytes as protobuf's serializer, and protobuf's parser gives the arrays back."""
    from augmentd import wire

    monkeypatch.setattr(wire, "_copy_threads", lambda: 4)
    rng = np.random.default_rng(5)
    image = rng.standard_normal((2, 1, 67, 71, 73)).astype(np.float32)   # 5.6 MB, odd extents: 2 copy tasks
    seg = rng.integers(-1, 3, (2, 1, 67, 71, 73)).astype(np.int16)
    assert wire._uninitialised_bytes(8) is not None  # CPython: the direct path runs
    data, reference = _encode_both_ways(image, seg)
    assert type(data) is bytes and len(data) > wire._DIRECT
    assert data == reference
    parsed = batch_pb2.StreamBatchesRequest.FromString(data).patches
    assert parsed.session_id == "s9-direct" and parsed.batch_index == 2 ** 40 + 3
    np.testing.assert_array_equal(np.frombuffer(parsed.image.inline_data, np.float32).reshape(image.shape), image)
    np.testing.assert_array_equal(np.frombuffer(parsed.segmentation.inline_data, np.int16).reshape(seg.shape), seg)
    # Two requests in a row do not share their buffers (each call makes its own bytes).
    again, _ = _encode_both_ways(image + 1, seg)
    assert again != data and data == reference


@pytest.mark.parametrize("shape", [(1, 1, 1, 1, 1), (1, 1, 3, 5, 7), (2, 1, 0, 4, 4), (1, 2, 129, 1, 1)])
def test_direct_encoding_of_odd_and_empty_sizes(monkeypatch, shape):
    """The in-place path for every size (the 1 MiB cut lowered to 0): odd byte counts, empty tensors, bfloat16
    (uint16 bit patterns) images, int8 / int16 labels."""
    from augmentd import wire

    monkeypatch.setattr(wire, "_DIRECT", 0)
    rng = np.random.default_rng(6)
    bf16 = rng.integers(0, 2 ** 16, shape).astype(np.uint16)
    for image, seg, dtype in ((rng.standard_normal(shape).astype(np.float32),
                               rng.integers(0, 3, (shape[0], 1, *shape[2:])).astype(np.int8), None),
                              (bf16, rng.integers(0, 3, (shape[0], 1, *shape[2:])).astype(np.int16),
                               tensor_pb2.DTYPE_BFLOAT16)):
        data, reference = _encode_both_ways(image, seg, dtype)
        assert data == reference
        parsed = batch_pb2.StreamBatchesRequest.FromString(data).patches
        assert parsed.image.inline_data == image.tobytes() and parsed.segmentation.inline_data == seg.tobytes()


def test_encoded_requests_of_the_wrong_size_or_layout_are_refused():
    from augmentd.wire import EncodedRequest, encode_stream_request

    image = np.zeros((2, 1, 4, 5, 6), np.float32)
    seg = np.zeros((2, 1, 4, 5, 6), np.int16)
    request = batch_pb2.AugmentRequest(session_id="s9", batch_index=1)
    image_head = tensor_pb2.Tensor(name="image", dtype=tensor_pb2.DTYPE_FLOAT32, shape=image.shape)
    seg_head = tensor_pb2.Tensor(name="segmentation", dtype=tensor_pb2.DTYPE_INT16, shape=seg.shape)
    with pytest.raises(ValueError, match=r"segmentation.inline_data: 240 bytes, but shape \[2, 1, 4, 5, 6\].* 480"):
        encode_stream_request(EncodedRequest(request, (image_head, seg_head), (image, seg.astype(np.int8))))
    with pytest.raises(ValueError, match=r"image.inline_data: 480 bytes"):
        encode_stream_request(EncodedRequest(request, (image_head, seg_head), (image[:1], seg)))
    with pytest.raises(ValueError, match="image: the array is not C-contiguous"):
        encode_stream_request(EncodedRequest(request, (image_head, seg_head), (image[:, :, ::-1], seg)))


def _malloc_probe(env):
    """Runs a child Python that tunes malloc (or not) and reports whether a 100 MB buffer was mmapped."""
    import os
    import subprocess
    import sys

    code = (
        "import ctypes, json, sys; sys.path.insert(0, sys.argv[1])\n"
        "from augmentd.wire import tune_malloc\n"
        "tuned = tune_malloc(); again = tune_malloc()\n"
        "class M(ctypes.Structure): _fields_ = [(n, ctypes.c_size_t) for n in "
        "('arena','ordblks','smblks','hblks','hblkhd','usmblks','fsmblks','uordblks','fordblks','keepcost')]\n"
        "libc = ctypes.CDLL(None); libc.mallinfo2.restype = M\n"
        "before = libc.mallinfo2().hblks; buf = bytearray(100 << 20); during = libc.mallinfo2().hblks\n"
        "print(json.dumps([tuned, again, during - before]))\n")
    src = os.path.join(os.path.dirname(augmentd_server.__file__), "..", "..", "client", "python", "src")
    out = subprocess.run([sys.executable, "-c", code, os.path.abspath(src)], env=env, check=True,
                         capture_output=True, text=True).stdout
    import json

    return json.loads(out)


def test_tune_malloc_keeps_large_buffers_off_mmap():
    import ctypes
    import os

    try:
        ctypes.CDLL(None).mallinfo2
    except AttributeError:
        pytest.skip("not glibc >= 2.33")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    tuned, again, mmapped = _malloc_probe(dict(env, AUGMENTD_MALLOC_TUNING="1"))
    assert tuned and again and mmapped == 0  # the 100 MB buffer came from the heap
    tuned, again, mmapped = _malloc_probe(dict(env, AUGMENTD_MALLOC_TUNING="0"))
    assert not tuned and not again and mmapped == 1  # glibc's default: a fresh mapping of its own


def test_parallel_copy_into_a_slot_view(monkeypatch):
    from augmentd import wire

    monkeypatch.setattr(wire, "_copy_threads", lambda: 4)  # the threaded path whatever this machine's cores

    rng = np.random.default_rng(4)
    src = rng.standard_normal((2, 1, 128, 128, 70)).astype(np.float32)  # 18 MB: 4 copy tasks
    dst = np.zeros_like(src)
    wire._parallel_copyto(dst, src)
    assert np.array_equal(dst, src)
    labels = rng.integers(-1, 3, src.shape).astype(np.int64)
    dst16 = np.zeros(src.shape, np.int16)
    wire._parallel_copyto(dst16, labels)  # converted as np.copyto(casting="unsafe")
    assert np.array_equal(dst16, labels.astype(np.int16))
    strided = src[:, :, ::-1]
    wire._parallel_copyto(dst, strided)  # not contiguous: one np.copyto
    assert np.array_equal(dst, strided)


def test_unix_send_buffer_of_connected_sockets_is_widened(tmp_path, monkeypatch):
    """widen_unix_send_buffer sets SO_SNDBUF on this process's sockets connected to the path (the kernel gives twice
    the request, capped at 2 x net.core.wmem_max) and leaves others alone; 0 or AUGMENTD_UNIX_SNDBUF=0: nothing."""
    import os
    import socket

    from augmentd.wire import widen_unix_send_buffer

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("no /proc/self/fd")
    with open("/proc/sys/net/core/wmem_max") as f:
        wmem_max = int(f.read())
    path, other = str(tmp_path / "a.sock"), str(tmp_path / "b.sock")
    listeners = []
    for p in (path, other):
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(p)
        listener.listen(2)
        listeners.append(listener)
    a, b = socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)
    a.connect(path)
    b.connect(other)
    try:
        default = b.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        monkeypatch.setenv("AUGMENTD_UNIX_SNDBUF", "0")
        assert widen_unix_send_buffer("unix://" + path) == 0
        assert a.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == default
        monkeypatch.delenv("AUGMENTD_UNIX_SNDBUF")
        want = 1 << 20
        assert widen_unix_send_buffer("unix://" + path, want) == 1
        assert a.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == max(default, 2 * min(want, wmem_max))
        assert b.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == default  # connected elsewhere
        assert widen_unix_send_buffer(path, want) == 1  # a plain path; already wide: left as it is
        assert widen_unix_send_buffer("unix://" + str(tmp_path / "none.sock"), want) == 0
    finally:
        for s in (a, b, *listeners):
            s.close()


def test_patch_request_bytes_parse_as_the_protobuf_request():
    """PatchAugmenter's StreamPatches requests built as bytes (a constant part per input slot and layout + the batch
    index and lease) parse as the message protobuf builds, and so do its release requests."""
    from augmentd.patch import patch_request_bytes, release_request_bytes

    template = batch_pb2.AugmentRequest(session_id="s-17")
    for t, name, off, n in ((template.image, "image", 0, 1000), (template.segmentation, "segmentation", 1024, 500)):
        t.name, t.dtype = name, tensor_pb2.DTYPE_FLOAT32
        t.shape.extend([2, 1, 5, 5, 5])
        t.cuda_ipc.region, t.cuda_ipc.offset, t.cuda_ipc.byte_size = "in-1", off, n
    for index, lease in ((0, batch_pb2.SlotLease(slot=0, generation=0)),
                         (2 ** 40 + 3, batch_pb2.SlotLease(slot=3, generation=300))):
        expected = batch_pb2.AugmentRequest()
        expected.CopyFrom(template)
        expected.batch_index = index
        expected.input_slot.CopyFrom(lease)
        data = patch_request_bytes(template.SerializeToString(), index, lease.SerializeToString())
        parsed = batch_pb2.StreamBatchesRequest.FromString(data)
        assert parsed == batch_pb2.StreamBatchesRequest(patches=expected)
        assert parsed.patches.HasField("input_slot") and parsed.WhichOneof("msg") == "patches"
    leases = [batch_pb2.SlotLease(slot=1, generation=7), batch_pb2.SlotLease(slot=0, generation=0)]
    parsed = batch_pb2.StreamBatchesRequest.FromString(release_request_bytes(leases))
    assert parsed == batch_pb2.StreamBatchesRequest(release=batch_pb2.Release(leases=leases))


@pytest.mark.parametrize("chunk", [1, 4099, 65536, 1 << 30])
@pytest.mark.parametrize("direct", [True, False], ids=["in_place", "joined"])
def test_chunked_requests_are_protobufs_bytes_in_order(monkeypatch, chunk, direct):
    """encode_chunked_request: a patches header (chunked_bytes = the total, inline_data empty but set) and chunks
    that protobuf parses back into offsets without gaps and the arrays' bytes, at chunk sizes of 1 byte, odd, and
    larger than everything; written in place (4 copy threads) or joined (off CPython)."""
    from augmentd import wire
    from augmentd.wire import EncodedRequest, encode_chunked_request

    monkeypatch.setattr(wire, "_copy_threads", lambda: 4)
    if not direct:
        monkeypatch.setattr(wire, "_uninitialised_bytes", lambda n: None)
    rng = np.random.default_rng(7)
    image = rng.standard_normal((2, 1, 9, 11, 13)).astype(np.float32)
    seg = rng.integers(-1, 3, (2, 1, 9, 11, 13)).astype(np.int16)
    if chunk == 1:
        image, seg = image[:, :, :2, :3, :3].copy(), seg[:, :, :2, :3, :3].copy()
    request = batch_pb2.AugmentRequest(session_id="s10", batch_index=12)
    heads = (tensor_pb2.Tensor(name="image", dtype=tensor_pb2.DTYPE_FLOAT32, shape=image.shape),
             tensor_pb2.Tensor(name="segmentation", dtype=tensor_pb2.DTYPE_INT16, shape=seg.shape))
    messages = encode_chunked_request(EncodedRequest(request, heads, (image, seg)), chunk)
    assert all(type(m) is bytes for m in messages)
    header = batch_pb2.StreamBatchesRequest.FromString(messages[0])
    assert header.WhichOneof("msg") == "patches"
    p = header.patches
    total = image.nbytes + seg.nbytes
    assert (p.session_id, p.batch_index, p.chunked_bytes) == ("s10", 12, total)
    for t, a in ((p.image, image), (p.segmentation, seg)):
        assert t.WhichOneof("storage") == "inline_data" and t.inline_data == b"" and list(t.shape) == list(a.shape)
    chunks = [batch_pb2.StreamBatchesRequest.FromString(m) for m in messages[1:]]
    assert all(c.WhichOneof("msg") == "chunk" for c in chunks)
    assert len(chunks) == -(-total // chunk)
    offsets = [c.chunk.offset for c in chunks]
    assert offsets == list(range(0, total, chunk))
    assert all(len(c.chunk.data) == min(chunk, total - c.chunk.offset) for c in chunks)
    assert b"".join(c.chunk.data for c in chunks) == image.tobytes() + seg.tobytes()


def test_chunked_requests_of_the_wrong_size_are_refused():
    from augmentd.wire import EncodedRequest, encode_chunked_request

    image = np.zeros((1, 1, 2, 2, 2), np.float32)
    seg = np.zeros((1, 1, 2, 2, 2), np.int16)
    heads = (tensor_pb2.Tensor(name="image", dtype=tensor_pb2.DTYPE_FLOAT32, shape=(1, 1, 2, 2, 3)),
             tensor_pb2.Tensor(name="segmentation", dtype=tensor_pb2.DTYPE_INT16, shape=seg.shape))
    with pytest.raises(ValueError, match=r"image.inline_data: 32 bytes, but shape \[1, 1, 2, 2, 3\]"):
        encode_chunked_request(EncodedRequest(batch_pb2.AugmentRequest(), heads, (image, seg)), 16)
    with pytest.raises(ValueError, match="chunk must be > 0"):
        encode_chunked_request(EncodedRequest(batch_pb2.AugmentRequest(), heads, (image, seg)), 0)
