"""The client of augmentd.v1.AugmentService: server info, health, sessions, patch-mode Augment and the
credit-driven batch stream (see ``augmentd.sessions``)."""
import enum
from typing import Optional, Sequence, Union

import grpc
import numpy as np

from augmentd.v1 import batch_pb2, server_info_pb2, service_pb2_grpc, session_pb2, tensor_pb2

from .security import TlsConfig, make_channel
from .sessions import AugmentdError, Batch, BatchStream, Session
from .slots import SlotSet
from .tensors import from_numpy
from .wire import decode_stream_response, decode_varint, encode_stream_request, encode_varint
from .wire import tune_malloc as _tune_malloc
from .wire import widen_unix_send_buffer


class HealthStatus(enum.IntEnum):
    """grpc.health.v1.HealthCheckResponse.ServingStatus."""
    UNKNOWN = 0
    SERVING = 1
    NOT_SERVING = 2
    SERVICE_UNKNOWN = 3

    def __str__(self) -> str:
        return self.name


def _encode_health_request(service: str) -> bytes:
    # HealthCheckRequest { string service = 1; } — tiny, encoded by hand so no health stubs are needed.
    data = service.encode()
    return b"\x0a" + encode_varint(len(data)) + data if data else b""


def _decode_health_response(data: bytes) -> HealthStatus:
    # HealthCheckResponse { ServingStatus status = 1; }
    status, i = 0, 0
    while i < len(data):
        tag = data[i]
        if tag != 0x08:
            raise ValueError(f"unexpected field tag {tag:#x} in HealthCheckResponse")
        status, i = decode_varint(data, i + 1)
    return HealthStatus(status)


class Client:
    """A connection to one augmentd server.

    ``target`` is a gRPC target: ``host:port`` or ``unix:///absolute/path``. The constructor waits up to
    ``connect_timeout`` seconds for the channel to become ready and raises ``grpc.FutureTimeoutError``
    otherwise. ``tls`` (None, True or a ``TlsConfig``) and ``token`` (a bearer token): ``augmentd.security``.
    ``tune_malloc``: keep the buffers of large (inline) messages warm in this process (``augmentd.wire.tune_malloc``;
    about 2.5x the inline patch throughput on the same host). Thread-safe (gRPC channels and stubs are).
    """

    def __init__(self, target: str, connect_timeout: float = 10.0, tls: Union[None, bool, TlsConfig] = None,
                 token: Optional[str] = None, tune_malloc: bool = True):
        self.target = target
        if tune_malloc:
            _tune_malloc()  # before the channel's threads allocate
        self._channel = make_channel(target, [("grpc.max_receive_message_length", -1),
                                              ("grpc.max_send_message_length", -1)], tls=tls, token=token)
        grpc.channel_ready_future(self._channel).result(timeout=connect_timeout)
        if target.startswith("unix:"):
            widen_unix_send_buffer(target)  # same-host connection: fewer rounds per large message (wire.py)
        self._tokens = {}  # session id -> session_token of the sessions this client opened
        self.stub = service_pb2_grpc.AugmentServiceStub(self._channel)
        # BatchStream uses this one: inline tensor bytes become views of the received message (augmentd.wire).
        self.stub.StreamBatchesDecoded = self._channel.stream_stream(
            "/augmentd.v1.AugmentService/StreamBatches",
            request_serializer=batch_pb2.StreamBatchesRequest.SerializeToString,
            response_deserializer=decode_stream_response)
        # augmentd.patch.PatchAugmenter's stream (patch mode): the same messages and decoder.
        self.stub.StreamPatchesDecoded = self._channel.stream_stream(
            "/augmentd.v1.AugmentService/StreamPatches",
            request_serializer=encode_stream_request,  # inline patches: one copy of their bytes
            response_deserializer=decode_stream_response)
        self._health_check = self._channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=_encode_health_request,
            response_deserializer=_decode_health_response,
        )

    def server_info(self, timeout: float = 10.0) -> server_info_pb2.ServerInfo:
        """AugmentService.GetServerInfo: version, devices, limits, supported transforms."""
        return self.stub.GetServerInfo(server_info_pb2.GetServerInfoRequest(), timeout=timeout).info

    def health(self, service: str = "", timeout: float = 10.0) -> HealthStatus:
        """grpc.health.v1.Health/Check for ``service`` ("" = the whole server)."""
        return self._health_check(service, timeout=timeout)

    def open_session(self, config: session_pb2.SessionConfig, start_batch_index: int = 0,
                     timeout: float = 120.0, input_regions: Sequence = ()) -> Session:
        """AugmentService.OpenSession. Raises ``AugmentdError`` (INVALID_ARGUMENT naming the field,
        RESOURCE_EXHAUSTED naming the limit, PERMISSION_DENIED for a dataset outside the server's roots, ...).

        For HOST_SHM / CUDA_IPC delivery (``config.delivery``) the session's output slots are opened here, once
        (``session.slots``; closed by ``close_session``). ``input_regions``: patch-mode input buffers to register
        (``augmentd.shm.SharedInput`` objects, or ``HostShmRegion`` / ``CudaIpcRegion`` messages); the server must
        run with ``--allow_client_shm``."""
        request = session_pb2.OpenSessionRequest(config=config, start_batch_index=start_batch_index)
        for region in input_regions:
            message = region.region() if hasattr(region, "region") else region
            if isinstance(message, tensor_pb2.CudaIpcRegion):
                request.cuda_ipc_regions.append(message)
            else:
                request.host_shm_regions.append(message)
        try:
            response = self.stub.OpenSession(request, timeout=timeout)
        except grpc.RpcError as err:
            raise AugmentdError.from_rpc_error(err, "OpenSession") from None
        self._tokens[response.session_id] = response.session_token
        slots = None
        if len(response.output_slots) > 0:
            try:
                slots = SlotSet(response)
            except BaseException:
                self.close_session(response.session_id)
                raise
        return Session(response.session_id, response, config, slots)

    def close_session(self, session, timeout: float = 30.0) -> server_info_pb2.SessionStats:
        """AugmentService.CloseSession; returns the session's final stats. ``session``: a Session or an id."""
        session_id, token = self._owned(session)
        if isinstance(session, Session) and session.slots is not None:
            session.slots.close()  # views of the slots still alive keep their mapping; new ones cannot be made
        try:
            stats = self.stub.CloseSession(session_pb2.CloseSessionRequest(session_id=session_id,
                                                                           session_token=token),
                                           timeout=timeout).final_stats
            self._tokens.pop(session_id, None)
            return stats
        except grpc.RpcError as err:
            raise AugmentdError.from_rpc_error(err, "CloseSession") from None

    def augment(self, session, image, segmentation, batch_index: int = 0, timeout: float = 120.0) -> Batch:
        """Patch mode: augments (B, C, *initial_patch) ``image`` and (B, 1, ...) ``segmentation`` as batch
        ``batch_index`` (replaying an index reproduces the batch). Each input is a numpy array (sent inline) or a
        ``Tensor`` message referencing a registered input region (``SharedInput.tensor(...)``: no bytes sent). The
        answer is always inline (slot delivery is for ``stream_batches``)."""
        session_id, token = self._owned(session)
        def as_tensor(x, name):
            return x if isinstance(x, tensor_pb2.Tensor) else from_numpy(x, name)
        request = batch_pb2.AugmentRequest(session_id=session_id, session_token=token, batch_index=batch_index,
                                           image=as_tensor(image, "image"),
                                           segmentation=as_tensor(segmentation, "segmentation"))
        try:
            return Batch(self.stub.Augment(request, timeout=timeout).batch)
        except grpc.RpcError as err:
            raise AugmentdError.from_rpc_error(err, "Augment") from None

    def stream_batches(self, session, credits: int = 4, start_batch_index: int = 0, max_batches: int = 0,
                       timeout: Optional[float] = None, hold: int = 1) -> BatchStream:
        """Dataset mode: an iterator of ``Batch`` over one StreamBatches call, keeping ``credits`` batches
        requested ahead of use. ``start_batch_index`` 0 continues where the session stands.

        HOST_SHM / CUDA_IPC sessions (pass the ``Session``, whose slots are open): batches view their slot without a
        copy and stay valid until ``hold`` more batches have been taken (default 1: until the next ``next()``) or
        the stream closes; ``hold`` < the session's slot count (prefetch_depth)."""
        session_id, token = self._owned(session)
        slots = session.slots if isinstance(session, Session) else None
        return BatchStream(self.stub, session_id, session_token=token, credits=credits,
                           start_batch_index=start_batch_index,
                           max_batches=max_batches, timeout=timeout, slots=slots, hold=hold)

    def stats(self, session=None, timeout: float = 10.0) -> server_info_pb2.GetStatsResponse:
        """AugmentService.GetStats for one session (a Session or an id) or, by default, all of them."""
        session_id = "" if session is None else (session.session_id if isinstance(session, Session) else session)
        try:
            return self.stub.GetStats(server_info_pb2.GetStatsRequest(session_id=session_id), timeout=timeout)
        except grpc.RpcError as err:
            raise AugmentdError.from_rpc_error(err, "GetStats") from None

    def remember_session(self, session_id: str, session_token: str) -> None:
        """Lets this client use a session another process opened and handed over (its id and its
        ``session_token``): later calls naming ``session_id`` carry the credential."""
        self._tokens[session_id] = session_token

    def _owned(self, session):
        """(id, credential) of a Session or of an id this client opened: the server answers calls on a session
        only with its OpenSessionResponse.session_token (an unknown id otherwise)."""
        if isinstance(session, Session):
            return session.session_id, session.session_token
        return session, self._tokens.get(session, "")

    @property
    def channel(self) -> grpc.Channel:
        return self._channel

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
