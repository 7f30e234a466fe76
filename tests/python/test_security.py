"""Security of the real augmentd binary: TLS and mTLS on TCP with a CA made here by the openssl CLI, bearer
tokens (--auth_token_file) on TCP and unix sockets, and health staying open for probes."""
import shutil
import subprocess

import grpc
import pytest

from augmentd_server import ServerProcess  # first: makes `augmentd` importable

import augmentd  # noqa: E402
from augmentd.v1 import server_info_pb2, session_pb2  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl CLI is not installed")


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _make_ca(d, name):
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
             "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=d)


def _make_cert(d, ca, name, san=None):
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key",
             "-out", f"{name}.csr", cwd=d)
    ext = d / f"{name}.ext"
    ext.write_text(f"subjectAltName={san}\n" if san else "basicConstraints=CA:FALSE\n")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
             "-days", "2", "-extfile", ext.name, "-out", f"{name}.pem", cwd=d)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    _make_ca(d, "ca")
    _make_ca(d, "other_ca")
    _make_cert(d, "ca", "server", san="IP:127.0.0.1,DNS:localhost")
    _make_cert(d, "ca", "client")
    _make_cert(d, "other_ca", "intruder")
    return d


def _start(args):
    proc = ServerProcess(["--device=cpu", *args])
    proc.addresses = proc.wait_for_serving()
    return proc


def _stop(proc):
    assert proc.stop() == 0, proc.output


def _connects(target, timeout=3.0, **kwargs):
    try:
        with augmentd.Client(target, connect_timeout=timeout, **kwargs) as client:
            client.server_info()
        return True
    except (grpc.FutureTimeoutError, grpc.RpcError):
        return False


def test_tls_server(pki):
    proc = _start(["--listen=127.0.0.1:0", f"--tls_cert={pki}/server.pem", f"--tls_key={pki}/server.key"])
    try:
        (tcp,) = proc.addresses
        assert _connects(tcp, tls=augmentd.TlsConfig(ca_file=str(pki / "ca.pem")))
        assert not _connects(tcp)  # plaintext client
        assert not _connects(tcp, tls=augmentd.TlsConfig(ca_file=str(pki / "other_ca.pem")))  # untrusted server
    finally:
        _stop(proc)


def test_mtls_requires_a_client_certificate_from_the_ca(pki, tmp_path):
    sock = tmp_path / "m.sock"
    proc = _start(["--listen=127.0.0.1:0", f"--listen=unix://{sock}", f"--tls_cert={pki}/server.pem",
                   f"--tls_key={pki}/server.key", f"--tls_client_ca={pki}/ca.pem"])
    try:
        tcp, uds = proc.addresses
        ca = str(pki / "ca.pem")
        assert not _connects(tcp, tls=augmentd.TlsConfig(ca_file=ca))  # no client certificate
        assert not _connects(tcp, tls=augmentd.TlsConfig(ca_file=ca, cert_file=str(pki / "intruder.pem"),
                                                         key_file=str(pki / "intruder.key")))
        assert _connects(tcp, tls=augmentd.TlsConfig(ca_file=ca, cert_file=str(pki / "client.pem"),
                                                     key_file=str(pki / "client.key")))
        assert _connects(uds)  # unix sockets stay plaintext (documented)
    finally:
        _stop(proc)


def test_bad_tls_flags_fail_at_start(pki, tmp_path):
    for args, needle in ((["--tls_cert=" + str(pki / "server.pem")], "--tls_key"),
                         ([f"--tls_cert={tmp_path}/none.pem", f"--tls_key={pki}/server.key"], "--tls_cert"),
                         ([f"--tls_cert={pki}/server.pem", f"--tls_key={pki}/server.key",
                           f"--tls_client_ca={pki}/server.csr"], "--tls_client_ca"),
                         ([f"--auth_token_file={tmp_path}/none"], "--auth_token_file")):
        proc = ServerProcess(["--listen=127.0.0.1:0", "--device=cpu", *args])
        rc = proc.proc.wait(timeout=30)
        assert rc == 1, proc.output
        assert needle in proc.output, proc.output


def test_bearer_tokens(tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("# trainers\ntok-alpha\n\n  tok-beta  \n")
    sock = tmp_path / "t.sock"
    proc = _start(["--listen=127.0.0.1:0", f"--listen=unix://{sock}", f"--auth_token_file={tokens}"])
    try:
        for target in proc.addresses:
            with augmentd.Client(target) as anonymous:
                assert anonymous.health() == augmentd.HealthStatus.SERVING  # health stays open
                calls = [
                    lambda c: c.server_info(),
                    lambda c: c.stats(),
                    lambda c: c.stub.OpenSession(session_pb2.OpenSessionRequest(), timeout=10),
                    lambda c: c.stub.CloseSession(session_pb2.CloseSessionRequest(session_id="s1-x"), timeout=10),
                    lambda c: c.stub.GetStats(server_info_pb2.GetStatsRequest(), timeout=10),
                    lambda c: list(c.stream_batches("s1-x", max_batches=1)),
                ]
                for call in calls:
                    with pytest.raises((grpc.RpcError, augmentd.AugmentdError)) as err:
                        call(anonymous)
                    code = err.value.code() if isinstance(err.value, grpc.RpcError) else err.value.code
                    assert code == grpc.StatusCode.UNAUTHENTICATED, err.value
            with augmentd.Client(target, token="tok-gamma") as wrong:
                with pytest.raises(grpc.RpcError) as err:
                    wrong.server_info()
                assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
                assert "tok-gamma" not in err.value.details()
            for token in ("tok-alpha", "tok-beta"):
                with augmentd.Client(target, token=token) as good:
                    assert good.server_info().api_version == "augmentd.v1"
                    # Past authentication, the request itself is judged (no config → INVALID_ARGUMENT).
                    with pytest.raises(grpc.RpcError) as err:
                        good.stub.OpenSession(session_pb2.OpenSessionRequest(), timeout=10)
                    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                    with pytest.raises(augmentd.AugmentdError) as err:
                        list(good.stream_batches("s1-x", max_batches=1))
                    assert err.value.code == grpc.StatusCode.NOT_FOUND
    finally:
        _stop(proc)
