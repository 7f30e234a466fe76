"""Transport security and bearer tokens for ``augmentd.Client``.

    client = augmentd.Client("gpu-node:50051",
                             tls=augmentd.TlsConfig(ca_file="ca.pem", cert_file="me.pem", key_file="me.key"),
                             token=open("token").read().strip())

* ``tls``: ``None`` (plaintext), ``True`` (TLS, the system's trusted roots) or a ``TlsConfig``: ``ca_file``
  verifies the server, ``cert_file`` + ``key_file`` present a client certificate (servers started with
  ``--tls_client_ca`` require one), ``server_name`` overrides the name checked against the server certificate.
  Servers speak TLS on TCP only; unix-socket targets stay plaintext.
* ``token``: sent on every call as metadata ``authorization: Bearer <token>`` (servers with
  ``--auth_token_file``). Over plaintext TCP the token is visible on the wire: use it with TLS or a unix socket.
"""
import dataclasses
from typing import Optional, Sequence, Tuple, Union

import grpc


@dataclasses.dataclass
class TlsConfig:
    ca_file: Optional[str] = None
    cert_file: Optional[str] = None
    key_file: Optional[str] = None
    server_name: Optional[str] = None


def _read(path: Optional[str]) -> Optional[bytes]:
    if path is None:
        return None
    with open(path, "rb") as f:
        return f.read()


class _CallDetails(grpc.ClientCallDetails):
    def __init__(self, details, metadata):
        self.method = details.method
        self.timeout = details.timeout
        self.metadata = metadata
        self.credentials = details.credentials
        self.wait_for_ready = getattr(details, "wait_for_ready", None)
        self.compression = getattr(details, "compression", None)


class _BearerToken(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
                   grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds ``authorization: Bearer <token>`` to every call (works on plaintext channels too)."""

    def __init__(self, token: str):
        self._header = ("authorization", f"Bearer {token}")

    def _details(self, details):
        return _CallDetails(details, list(details.metadata or []) + [self._header])

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation, details, request_iterator):
        return continuation(self._details(details), request_iterator)

    def intercept_stream_stream(self, continuation, details, request_iterator):
        return continuation(self._details(details), request_iterator)


def make_channel(target: str, options: Sequence[Tuple[str, object]] = (),
                 tls: Union[None, bool, TlsConfig] = None, token: Optional[str] = None) -> grpc.Channel:
    """A channel to ``target`` with the given TLS settings and bearer token (see the module docstring)."""
    options = list(options)
    if tls is None or tls is False:
        channel = grpc.insecure_channel(target, options=options)
    else:
        config = TlsConfig() if tls is True else tls
        if (config.cert_file is None) != (config.key_file is None):
            raise ValueError("TlsConfig: cert_file and key_file go together (client certificate for mTLS)")
        credentials = grpc.ssl_channel_credentials(root_certificates=_read(config.ca_file),
                                                   private_key=_read(config.key_file),
                                                   certificate_chain=_read(config.cert_file))
        if config.server_name:
            options.append(("grpc.ssl_target_name_override", config.server_name))
        channel = grpc.secure_channel(target, credentials, options=options)
    if token:
        channel = grpc.intercept_channel(channel, _BearerToken(token))
    return channel
