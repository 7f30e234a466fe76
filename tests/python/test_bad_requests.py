"""A data-driven table of bad requests over every AugmentService RPC against the real binary, on TCP and on a
unix socket: each gets its expected status code and a message naming the field or limit; afterwards the server
is still SERVING and a good session works. Complements the C++ table in tests/integration/session_test.cc
(pipeline fields, dtypes, dataset paths, inline sizes): this one adds closed / empty / unknown session ids on
every RPC, stream protocol errors, per-session stream and batch limits and request-size limits."""
import numpy as np
import pytest

from augmentd_server import ServerProcess  # first: makes `augmentd` importable
from test_sessions import _write_dataset

import augmentd  # noqa: E402
import grpc  # noqa: E402
from augmentd.tensors import from_numpy  # noqa: E402
from augmentd.v1 import batch_pb2, server_info_pb2, session_pb2, tensor_pb2  # noqa: E402

C = grpc.StatusCode


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bad")
    dataset = _write_dataset(tmp)
    proc = ServerProcess(["--listen=127.0.0.1:0", f"--listen=unix://{tmp}/b.sock", "--device=cpu",
                          f"--dataset_root={tmp}", "--max_batch_size=4", "--max_prefetch_depth=4",
                          "--max_streams_per_session=1", "--max_request_bytes=256KiB", "--batch_workers=1"])
    try:
        proc.addresses = proc.wait_for_serving()
        yield proc, dataset
    finally:
        assert proc.stop() == 0, proc.output


def _stream_status(stub, messages):
    """Sends `messages` on one StreamBatches call, half-closes, drains it; returns (code, details)."""
    try:
        for _ in stub.StreamBatches(iter(messages), timeout=30):
            pass
        return C.OK, ""
    except grpc.RpcError as err:
        return err.code(), err.details()


def _call(fn):
    try:
        fn()
        return C.OK, ""
    except grpc.RpcError as err:
        return err.code(), err.details()


@pytest.mark.parametrize("which", [0, 1], ids=["tcp", "unix"])
def test_bad_request_table(served, which):
    server, dataset = served
    with augmentd.Client(server.addresses[which]) as client:
        stub = client.stub
        ds = client.open_session(augmentd.dataset_session_config(str(dataset), batch_size=2, seed=1))
        patch = client.open_session(augmentd.patch_session_config([8, 8, 8], batch_size=2, seed=1))
        closed = client.open_session(augmentd.dataset_session_config(str(dataset), batch_size=1))
        client.close_session(closed)
        shape = (2, 1, *patch.initial_patch_size)
        image = from_numpy(np.zeros(shape, np.float32), "image")
        seg = from_numpy(np.zeros(shape, np.int16), "segmentation")

        tokens = {s.session_id: s.session_token for s in (ds, patch)}

        def augment(session_id=patch.session_id, img=image, sg=seg, index=0):
            return lambda: stub.Augment(batch_pb2.AugmentRequest(session_id=session_id, batch_index=index, image=img,
                                                                 segmentation=sg,
                                                                 session_token=tokens.get(session_id, "")),
                                        timeout=30)

        def open_with(**fields):
            config = augmentd.dataset_session_config(str(dataset), batch_size=2)
            for k, v in fields.items():
                setattr(config, k, v)
            return lambda: stub.OpenSession(session_pb2.OpenSessionRequest(config=config), timeout=30)

        def open_dataset(path):
            config = augmentd.dataset_session_config(str(dataset), batch_size=2)
            config.dataset.dataset_path = path
            return lambda: stub.OpenSession(session_pb2.OpenSessionRequest(config=config), timeout=30)

        def start(session_id, **kw):
            return batch_pb2.StreamBatchesRequest(start=batch_pb2.StreamStart(
                session_id=session_id, session_token=tokens.get(session_id, ""), **kw))

        credit = batch_pb2.StreamBatchesRequest(credit=batch_pb2.Credit(credits=1))
        release = batch_pb2.StreamBatchesRequest(release=batch_pb2.Release())
        three = np.zeros((3, 1, *patch.initial_patch_size), np.float32)
        table = [
            # (what, call, expected code, needle in the message)
            ("close: empty id", lambda: stub.CloseSession(session_pb2.CloseSessionRequest(), timeout=10),
             C.INVALID_ARGUMENT, "session_id"),
            ("close: unknown id", lambda: stub.CloseSession(session_pb2.CloseSessionRequest(session_id="s9-0"),
                                                            timeout=10), C.NOT_FOUND, "session_id"),
            ("close: closed id", lambda: stub.CloseSession(session_pb2.CloseSessionRequest(
                session_id=closed.session_id), timeout=10), C.FAILED_PRECONDITION, "closed"),
            ("stats: unknown id", lambda: stub.GetStats(server_info_pb2.GetStatsRequest(session_id="x"), timeout=10),
             C.NOT_FOUND, "session_id"),
            ("stats: closed id", lambda: stub.GetStats(server_info_pb2.GetStatsRequest(
                session_id=closed.session_id), timeout=10), C.FAILED_PRECONDITION, "closed"),
            ("augment: empty id", augment(session_id=""), C.INVALID_ARGUMENT, "session_id"),
            ("augment: unknown id", augment(session_id="s9-0"), C.NOT_FOUND, "session_id"),
            ("augment: closed id", augment(session_id=closed.session_id), C.FAILED_PRECONDITION, "closed"),
            ("augment: dataset session", augment(session_id=ds.session_id), C.FAILED_PRECONDITION, "dataset mode"),
            ("augment: no image", augment(img=tensor_pb2.Tensor()), C.INVALID_ARGUMENT, "image"),
            ("augment: batch above batch_size", augment(
                img=from_numpy(three, "image"),
                sg=from_numpy(three.astype(np.int16), "segmentation")), C.INVALID_ARGUMENT,
             "batch_size"),
            ("augment: image / segmentation batch differ", augment(
                sg=from_numpy(np.zeros((1, *shape[1:]), np.int16), "segmentation")),
             C.INVALID_ARGUMENT, "segmentation"),
            ("augment: int16 image", augment(img=from_numpy(np.zeros(shape, np.int16), "image")),
             C.INVALID_ARGUMENT, "image.dtype"),
            ("augment: inline bytes too long", augment(img=tensor_pb2.Tensor(
                dtype=tensor_pb2.DTYPE_FLOAT32, shape=list(shape), inline_data=b"\0" * (np.prod(shape) * 4 + 4))),
             C.INVALID_ARGUMENT, "image.inline_data"),
            ("augment: message above max_request_bytes", augment(
                img=from_numpy(np.zeros((4, 1, 40, 40, 40), np.float32), "image")),
             C.RESOURCE_EXHAUSTED, ""),
            ("open: batch_size 0", open_with(batch_size=0), C.INVALID_ARGUMENT, "batch_size"),
            ("open: batch_size above max_batch_size", open_with(batch_size=5), C.RESOURCE_EXHAUSTED, "max_batch_size"),
            ("open: prefetch above max_prefetch_depth", open_with(prefetch_depth=5), C.RESOURCE_EXHAUSTED,
             "max_prefetch_depth"),
            ("open: NaN weight", open_with(weight=float("nan")), C.INVALID_ARGUMENT, "config.weight"),
            ("open: bad device string", open_with(device="gpu0"), C.INVALID_ARGUMENT, "config.device"),
            ("open: missing CUDA device", open_with(device="cuda:99"),
             (C.NOT_FOUND, C.INVALID_ARGUMENT, C.FAILED_PRECONDITION), "device"),
            ("open: dataset path escape", open_dataset(str(dataset) + "/../../../etc"),
             (C.INVALID_ARGUMENT, C.PERMISSION_DENIED), "dataset_path"),
            ("open: missing dataset", open_dataset(str(dataset) + "_nope"), C.NOT_FOUND, "dataset_path"),
            ("stream: credit first", lambda: _raise(_stream_status(stub, [credit])), C.INVALID_ARGUMENT, "start"),
            ("stream: release first", lambda: _raise(_stream_status(stub, [release])), C.INVALID_ARGUMENT, "start"),
            ("stream: empty message", lambda: _raise(_stream_status(stub, [batch_pb2.StreamBatchesRequest()])),
             C.INVALID_ARGUMENT, "msg"),
            ("stream: no message", lambda: _raise(_stream_status(stub, [])), C.INVALID_ARGUMENT, "start"),
            ("stream: empty id", lambda: _raise(_stream_status(stub, [start("")])), C.INVALID_ARGUMENT, "session_id"),
            ("stream: unknown id", lambda: _raise(_stream_status(stub, [start("s9-0")])), C.NOT_FOUND, "session_id"),
            ("stream: closed id", lambda: _raise(_stream_status(stub, [start(closed.session_id)])),
             C.FAILED_PRECONDITION, "closed"),
            ("stream: start twice", lambda: _raise(_stream_status(stub, [start(ds.session_id), start(ds.session_id)])),
             C.INVALID_ARGUMENT, "start"),
            ("stream: patch-mode session", lambda: _raise(_stream_status(stub, [start(patch.session_id)])),
             C.UNIMPLEMENTED, "session_id"),
        ]
        assert len(table) >= 25
        for what, call, code, needle in table:
            got, details = _call(call)
            codes = code if isinstance(code, tuple) else (code,)
            assert got in codes, f"{what}: got {got} '{details}', expected {codes}"
            assert needle in details, f"{what}: '{details}' does not name '{needle}'"

        # max_streams_per_session=1: a second concurrent stream on the session is refused, naming the limit.
        first = client.stream_batches(ds, credits=1)
        assert next(first).batch_index == 0
        got, details = _stream_status(stub, [start(ds.session_id, initial_credits=1)])
        assert got == C.RESOURCE_EXHAUSTED and "max_streams_per_session" in details, (got, details)
        first.close()

        # Still healthy; the good sessions still work.
        assert client.health() == augmentd.HealthStatus.SERVING
        with client.stream_batches(ds, credits=2, max_batches=2) as stream:
            assert len(list(stream)) == 2
        good = client.augment(patch, np.zeros(shape, np.float32), np.zeros(shape, np.int16))
        assert good.image.shape == (2, 1, 8, 8, 8) and good.session_id == patch.session_id
        client.close_session(ds)
        client.close_session(patch)


def _raise(status):
    code, details = status
    if code != C.OK:
        raise _Rpc(code, details)


class _Rpc(grpc.RpcError):
    def __init__(self, code, details):
        super().__init__(details)
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details
