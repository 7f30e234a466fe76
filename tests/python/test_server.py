"""The real augmentd process through the generated Python stubs and augmentd.Client, over TCP and unix sockets."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys

import grpc
import pytest

from augmentd_server import REPO, ServerProcess, augmentd_bin, client_env  # first: makes `augmentd` importable

import augmentd  # noqa: E402
from augmentd.v1 import pipeline_pb2, server_info_pb2, service_pb2_grpc, session_pb2  # noqa: E402


@pytest.fixture
def server(tmp_path):
    """augmentd on 127.0.0.1:<any free port> and unix://<tmp>/augmentd.sock, CPU device, non-default limits."""
    sock = tmp_path / "augmentd.sock"
    proc = ServerProcess(["--listen=127.0.0.1:0", f"--listen=unix://{sock}", "--device=cpu", "--max_sessions=9",
                          "--max_batch_size=3", "--max_request_bytes=5MiB"])
    try:
        proc.addresses = proc.wait_for_serving()
        yield proc
    finally:
        rc = proc.stop()
    assert rc == 0, f"augmentd exited with {rc} after SIGTERM:\n{proc.output}"

DEFAULT_TRAINER_TRANSFORMS = [
    "spatial", "gaussian_noise", "gaussian_blur", "multiplicative_brightness", "contrast", "simulate_low_resolution",
    "gamma", "mirror", "mask_image", "remove_label", "convert_segmentation_to_regions", "downsample_seg_for_ds",
]


def _targets(server):
    tcp, uds = server.addresses
    assert re.fullmatch(r"127\.0\.0\.1:\d+", tcp) and not tcp.endswith(":0"), tcp
    assert uds.startswith("unix:///"), uds
    return tcp, uds


@pytest.mark.parametrize("which", ["tcp", "unix"])
def test_server_info(server, which):
    target = dict(zip(["tcp", "unix"], _targets(server)))[which]
    with augmentd.Client(target) as client:
        info = client.server_info()
    assert info.version == augmentd.__version__
    assert info.api_version == "augmentd.v1"
    assert info.devices[0].kind == server_info_pb2.DEVICE_KIND_CPU
    assert info.devices[0].name == "cpu"
    assert info.devices[0].total_memory_bytes > 0
    assert info.default_device == "cpu"
    assert info.limits.max_sessions == 9
    assert info.limits.max_batch_size == 3
    assert info.limits.max_request_bytes == 5 * 2**20
    assert not info.limits.client_shared_memory_allowed
    names = [t.name for t in info.transforms]
    assert len(names) == len(set(names)) == len(pipeline_pb2.TransformKind.keys()) - 1
    for t in info.transforms:
        assert t.name == pipeline_pb2.TransformKind.Name(t.kind).lower()
    for name in DEFAULT_TRAINER_TRANSFORMS:
        assert name in names
    assert pipeline_pb2.PRESET_NNUNET_DEFAULT in info.presets
    assert list(info.bgv2_versions) == ["0.3.5", "0.3.6"]  # SpatialTransform semantics (issue 23)
    assert list(info.features) == ["patch_chunks"]  # StreamPatches chunked inline batches (issue 22)
    implemented = [t.name for t in info.transforms if t.cpu]
    for name in DEFAULT_TRAINER_TRANSFORMS:  # the engine implements the whole default trainer chain
        assert name in implemented
    assert info.deliveries[0] == server_info_pb2.DELIVERY_KIND_INLINE
    # `cuda` comes from the engine registry's CUDA backends (issue 21): none in a build without CUDA, else every
    # transform of the default trainer (each has a chain stage, spatial / DS the executor's own step).
    on_cuda = [t.name for t in info.transforms if t.cuda]
    build = os.environ.get("AUGMENTD_BUILD_DIR", "")
    if build and os.path.exists(os.path.join(build, "augment/kernels/cuda/libaugment_cuda_kernels.a")):
        for name in DEFAULT_TRAINER_TRANSFORMS:
            assert name in on_cuda, (name, on_cuda)
    assert not on_cuda or set(DEFAULT_TRAINER_TRANSFORMS) <= set(on_cuda), on_cuda


@pytest.mark.parametrize("which", ["tcp", "unix"])
def test_health(server, which):
    target = dict(zip(["tcp", "unix"], _targets(server)))[which]
    with augmentd.Client(target) as client:
        assert client.health() == augmentd.HealthStatus.SERVING
        assert client.health("augmentd.v1.AugmentService") == augmentd.HealthStatus.SERVING
        with pytest.raises(grpc.RpcError) as err:
            client.health("no.such.Service")
        assert err.value.code() == grpc.StatusCode.NOT_FOUND
    # The same check without augmentd.Client: a raw grpc.health.v1.Health/Check call on a bare channel.
    with grpc.insecure_channel(target) as channel:
        check = channel.unary_unary("/grpc.health.v1.Health/Check", request_serializer=lambda b: b,
                                    response_deserializer=lambda b: b)
        assert check(b"", timeout=10) == b"\x08\x01"  # HealthCheckResponse{status: SERVING}


def test_server_reflection(server):
    """grpc.reflection.v1alpha: lists the services and serves service.proto (raw bidi call, no extra package)."""
    tcp, _ = _targets(server)
    with grpc.insecure_channel(tcp) as channel:
        info = channel.stream_stream("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                                     request_serializer=lambda b: b, response_deserializer=lambda b: b)
        # ServerReflectionRequest{list_services: ""} and {file_containing_symbol: "augmentd.v1.AugmentService"}
        symbol = b"augmentd.v1.AugmentService"
        requests = [b"\x3a\x00", b"\x22" + bytes([len(symbol)]) + symbol]
        responses = list(info(iter(requests), timeout=10))
    assert len(responses) == 2
    assert b"augmentd.v1.AugmentService" in responses[0]
    assert b"grpc.health.v1.Health" in responses[0]
    assert b"augmentd/v1/service.proto" in responses[1]


def test_generated_stubs_directly(server):
    """The generated stubs work without the Client wrapper; malformed session requests get precise codes."""
    _, uds = _targets(server)
    with grpc.insecure_channel(uds) as channel:
        stub = service_pb2_grpc.AugmentServiceStub(channel)
        info = stub.GetServerInfo(server_info_pb2.GetServerInfoRequest(), timeout=10).info
        assert info.version == augmentd.__version__
        with pytest.raises(grpc.RpcError) as err:
            stub.OpenSession(session_pb2.OpenSessionRequest(), timeout=10)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "config" in err.value.details()
        stats = stub.GetStats(server_info_pb2.GetStatsRequest(), timeout=10)
        assert stats.server.active_sessions == 0
        responses = stub.StreamBatches(iter([]), timeout=10)
        with pytest.raises(grpc.RpcError) as err:
            list(responses)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with augmentd.Client(uds) as client:  # still healthy
        assert client.health() == augmentd.HealthStatus.SERVING


def test_cli_info(server):
    tcp, uds = _targets(server)
    out = subprocess.run([sys.executable, "-m", "augmentd", "info", "--target", uds], env=client_env(),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert f"augmentd {augmentd.__version__}" in out.stdout
    assert "default device: cpu" in out.stdout
    assert "max_sessions = 9" in out.stdout
    out = subprocess.run([sys.executable, "-m", "augmentd", "info", "--target", tcp, "--json"], env=client_env(),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["version"] == augmentd.__version__
    assert info["devices"][0]["name"] == "cpu"
    assert info["limits"]["max_batch_size"] == 3


def test_cli_unreachable_server_fails_cleanly(tmp_path):
    out = subprocess.run([sys.executable, "-m", "augmentd", "info", "--target", f"unix://{tmp_path}/none.sock",
                          "--timeout", "1"], env=client_env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "no server reachable" in out.stderr


def test_sigint_exits_zero_and_socket_is_gone(tmp_path):
    sock = tmp_path / "s.sock"
    proc = ServerProcess([f"--listen=unix://{sock}", "--device=cpu"])
    proc.wait_for_serving()
    with augmentd.Client(f"unix://{sock}") as client:
        assert client.server_info().default_device == "cpu"
    assert proc.stop(signal.SIGINT) == 0, proc.output
    assert "draining" in proc.output
    with pytest.raises(grpc.FutureTimeoutError):
        augmentd.Client(f"unix://{sock}", connect_timeout=0.5)


def test_bad_flag_exits_2_with_one_line():
    out = subprocess.run([augmentd_bin(), "--no_such_flag=1"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.count("\n") == 1 and "unknown flag '--no_such_flag'" in out.stderr, out.stderr
    out = subprocess.run([augmentd_bin(), "--device=tpu"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "--device" in out.stderr, out.stderr


def test_help_lists_every_flag():
    out = subprocess.run([augmentd_bin(), "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    for flag in ["--listen", "--device", "--max_sessions", "--max_request_bytes", "--max_batch_size",
                 "--max_prefetch_depth", "--metrics_port", "--drain_timeout", "--allow_client_shm"]:
        assert flag in out.stdout


def test_busy_port_fails_cleanly():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        out = subprocess.run([augmentd_bin(), f"--listen=127.0.0.1:{port}", "--device=cpu"], capture_output=True,
                             text=True, timeout=60)
    assert out.returncode == 1, out.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in out.stderr


def test_generated_code_is_not_committed():
    if shutil.which("git") is None or not os.path.isdir(os.path.join(REPO, ".git")):
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "ls-files", "client/python/src/augmentd/_proto"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout
    assert tracked == ""
    ignored = subprocess.run(["git", "check-ignore", "-q", "client/python/src/augmentd/_proto/augmentd/v1/x_pb2.py"],
                             cwd=REPO)
    assert ignored.returncode == 0


@pytest.mark.parametrize("service", ["", "augmentd.v1.AugmentService", "x" * 300])
def test_health_wire_format_matches_protobuf(service):
    """The hand-written health codec equals protobuf's encoding (StringValue / Int32Value share the wire layout
    of HealthCheckRequest {string service = 1} / HealthCheckResponse {enum status = 1})."""
    from google.protobuf import wrappers_pb2

    from augmentd import client as client_module
    assert client_module._encode_health_request(service) == wrappers_pb2.StringValue(value=service).SerializeToString()
    for status in augmentd.HealthStatus:
        wire = wrappers_pb2.Int32Value(value=int(status)).SerializeToString()
        assert client_module._decode_health_response(wire) == status
