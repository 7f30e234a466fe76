"""A minimal client of augmentd.v1.AugmentService (more RPCs arrive with sessions, issue 5)."""
import enum

import grpc

from augmentd.v1 import server_info_pb2, service_pb2_grpc


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
    if not data:
        return b""
    out = bytearray(b"\x0a")
    n = len(data)
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            break
    return bytes(out) + data


def _decode_health_response(data: bytes) -> HealthStatus:
    # HealthCheckResponse { ServingStatus status = 1; }
    status, i = 0, 0
    while i < len(data):
        tag = data[i]
        i += 1
        if tag != 0x08:
            raise ValueError(f"unexpected field tag {tag:#x} in HealthCheckResponse")
        value, shift = 0, 0
        while True:
            byte = data[i]
            i += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        status = value
    return HealthStatus(status)


class Client:
    """A connection to one augmentd server.

    ``target`` is a gRPC target: ``host:port`` or ``unix:///absolute/path``. The constructor waits up to
    ``connect_timeout`` seconds for the channel to become ready and raises ``grpc.FutureTimeoutError``
    otherwise. Thread-safe (gRPC channels and stubs are).
    """

    def __init__(self, target: str, connect_timeout: float = 10.0):
        self.target = target
        self._channel = grpc.insecure_channel(target, options=[("grpc.max_receive_message_length", -1)])
        grpc.channel_ready_future(self._channel).result(timeout=connect_timeout)
        self.stub = service_pb2_grpc.AugmentServiceStub(self._channel)
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

    @property
    def channel(self) -> grpc.Channel:
        return self._channel

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
