"""Deployment checks (issue 8): the manifests and the Dockerfile pass scripts/check-deploy.sh, broken copies
fail it, and the container's entrypoint and health probe behave as documented.

Everything here is offline: kubectl kustomize, kubernetes-validate, yamllint, hadolint and ShellCheck come
pinned from requirements.txt in .venv; no cluster and no Docker engine are needed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "scripts" / "check-deploy.sh"
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"


def run_check(env_overrides: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, **(env_overrides or {}))
    return subprocess.run(["bash", str(CHECK)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_check_deploy_passes_on_the_repository():
    result = run_check()
    assert result.returncode == 0, result.stdout + result.stderr
    summary = result.stdout.strip().splitlines()[-1]
    match = re.fullmatch(r"deploy: (\d+) passed, 0 failed", summary)
    assert match, summary
    # The base and every mode are rendered and validated; overlays also pass the policy check.
    for overlay in ("sidecar", "per-node", "per-node-cuda-ipc", "remote"):
        for check in ("render", "schema", "policy"):
            assert re.search(rf"^PASS  {check} +overlays/{overlay}\b", result.stdout, re.M), (check, overlay)
    for check in ("yamllint", "hadolint", "scripts"):
        assert re.search(rf"^PASS  {check}\b", result.stdout, re.M), check


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


# (what breaks, file under deploy/, old text, new text, the check expected to fail)
BROKEN_MANIFESTS = [
    ("unknown field", "base/deployment.yaml", "periodSeconds: 5", "periodSecondz: 5", "schema"),
    ("removed apiVersion", "overlays/remote/pdb.yaml", "apiVersion: policy/v1", "apiVersion: policy/v1beta1",
     "schema"),
    ("misspelt kind", "overlays/sidecar/resourceclaimtemplate.yaml", "kind: ResourceClaimTemplate",
     "kind: ResourceClaimTemplates", "schema"),
    ("missing resource", "overlays/remote/kustomization.yaml", "  - pdb.yaml\n", "  - pdb-missing.yaml\n", "render"),
    ("grace period shorter than the drain", "base/deployment.yaml",
     "terminationGracePeriodSeconds: 45", "terminationGracePeriodSeconds: 20", "policy"),
    ("writable root filesystem", "overlays/sidecar/job-patch.yaml",
     "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "policy"),
    ("no PodDisruptionBudget", "overlays/per-node/kustomization.yaml", "  - pdb.yaml\n", "", "policy"),
    ("hostPID without a privileged namespace", "overlays/per-node-cuda-ipc/namespace-patch.yaml",
     "enforce: privileged", "enforce: baseline", "policy"),
    ("bad indentation", "overlays/remote/service.yaml", "  clusterIP: None", "  clusterIP:   None", "yamllint"),
]


@pytest.mark.parametrize("what,rel,old,new,check", BROKEN_MANIFESTS, ids=[b[0] for b in BROKEN_MANIFESTS])
def test_a_broken_manifest_is_rejected(tmp_path, what, rel, old, new, check):
    deploy = tmp_path / "deploy"
    shutil.copytree(ROOT / "deploy", deploy)
    _replace(deploy / rel, old, new)
    result = run_check({"AUGMENTD_DEPLOY_DIR": str(deploy)})
    assert result.returncode != 0, f"{what}: accepted\n{result.stdout}"
    assert re.search(rf"^FAIL  {check}\b", result.stdout, re.M), f"{what}: no FAIL {check}\n{result.stdout}"
    assert re.search(r"^deploy: \d+ passed, [1-9]\d* failed$", result.stdout, re.M), result.stdout


@pytest.mark.parametrize("old,new", [
    ("USER 10001:10001\nWORKDIR /home/augmentd", "USER root\nWORKDIR /home/augmentd"),  # DL3002: runs as root
    ("FROM ${DEBIAN_IMAGE} AS client", "FROM debian:latest AS client"),                # DL3007: floating tag
    ("apt-get install -y --no-install-recommends python3 python3-venv",
     "apt-get install python3 python3-venv"),                                         # DL3014/DL3015
], ids=["root user", "latest tag", "interactive apt-get"])
def test_a_broken_dockerfile_is_rejected(tmp_path, old, new):
    docker = tmp_path / "docker"
    shutil.copytree(ROOT / "docker", docker)
    _replace(docker / "Dockerfile", old, new)
    result = run_check({"AUGMENTD_DOCKERFILE": str(docker / "Dockerfile"), "AUGMENTD_CHECKS": "hadolint"})
    assert result.returncode != 0, result.stdout
    assert re.search(r"^FAIL  hadolint\b", result.stdout, re.M), result.stdout


# --- The entrypoint, run with a stand-in for the augmentd binary. ----------------------------------------------

@pytest.fixture()
def fake_server(tmp_path):
    binary = tmp_path / "augmentd"
    binary.write_text('#!/bin/sh\necho "ARGS: $*"\n')
    binary.chmod(0o755)
    flags = tmp_path / "flags.d"
    flags.mkdir()
    (flags / "listen").write_text("0.0.0.0:50051\n")
    (flags / "drain_timeout").write_text("30s\n")
    # ConfigMap volumes also hold hidden ..data entries; they must be ignored.
    (flags / "..data").mkdir()
    return {"AUGMENTD_BIN": str(binary), "AUGMENTD_FLAGS_DIR": str(flags)}


def run_entrypoint(env_overrides, *args):
    env = {k: v for k, v in os.environ.items() if k != "AUGMENTD_SKIP_CHECKS"}
    env.update(env_overrides)
    return subprocess.run(["bash", str(ENTRYPOINT), *args], env=env, capture_output=True, text=True, timeout=60)


def test_entrypoint_cpu_skips_the_gpu_check_and_passes_flags(fake_server):
    result = run_entrypoint(dict(fake_server, AUGMENTD_MIN_SHM_MB="0"), "--device=cpu", "--max_sessions=4")
    assert result.returncode == 0, result.stderr
    assert "GPU checks skipped" in result.stderr
    args = result.stdout.strip()
    # ConfigMap flags first (sorted by name), then the container's arguments, which win.
    assert args == "ARGS: --drain_timeout=30s --listen=0.0.0.0:50051 --device=cpu --max_sessions=4", args


def _has_gpu() -> bool:
    return any(Path("/dev").glob("nvidia[0-9]*"))


@pytest.mark.skipif(_has_gpu(), reason="this machine has a GPU: the no-GPU message cannot be provoked")
def test_entrypoint_explains_a_missing_gpu(fake_server):
    result = run_entrypoint(dict(fake_server, AUGMENTD_MIN_SHM_MB="0"), "--device", "cuda:0")
    assert result.returncode == 78, result.stderr
    assert "ARGS" not in result.stdout
    assert "no NVIDIA GPU device nodes" in result.stderr and "--gpus" in result.stderr
    assert "--device=cpu" in result.stderr
    # auto only warns and starts the server (which falls back to the CPU).
    result = run_entrypoint(dict(fake_server, AUGMENTD_MIN_SHM_MB="0"), "--device=auto")
    assert result.returncode == 0 and "ARGS" in result.stdout, result.stderr
    assert "will run on the CPU" in result.stderr


def test_entrypoint_explains_a_small_dev_shm(fake_server):
    result = run_entrypoint(dict(fake_server, AUGMENTD_MIN_SHM_MB="99999999"), "--device=cpu")
    assert result.returncode == 78, result.stderr
    assert "/dev/shm is" in result.stderr and "--shm-size" in result.stderr and "medium: Memory" in result.stderr
    assert "ARGS" not in result.stdout


def test_entrypoint_runs_a_command(fake_server):
    result = run_entrypoint(fake_server, "echo", "hello")
    assert result.returncode == 0 and result.stdout.strip() == "hello"


# --- The health probe of the runtime image, against a grpc.health.v1 server written with grpcio. --------------

@pytest.fixture(scope="module")
def health_probe(tmp_path_factory):
    if not shutil.which("g++") or subprocess.run(["pkg-config", "--exists", "grpc++"]).returncode != 0:
        pytest.skip("g++ or the grpc++ development files are missing (scripts/setup.sh installs them)")
    out = tmp_path_factory.mktemp("probe") / "augmentd-health"
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "grpc++"], capture_output=True, text=True,
                           check=True).stdout.split()
    subprocess.run(["g++", "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-o", str(out),
                    str(ROOT / "docker" / "health_probe.cc"), *flags], check=True, timeout=300)
    return out


SERVER = r"""
import sys, time
from concurrent import futures
import grpc
answers = {b"": b"\x08\x01", b"\x0a\x08draining": b"\x08\x02"}   # SERVING, NOT_SERVING
def check(request, context):
    if request not in answers:
        context.abort(grpc.StatusCode.NOT_FOUND, "unknown service")
    return answers[request]
handler = grpc.method_handlers_generic_handler(
    "grpc.health.v1.Health", {"Check": grpc.unary_unary_rpc_method_handler(check)})
server = grpc.server(futures.ThreadPoolExecutor(2))
server.add_generic_rpc_handlers((handler,))
port = server.add_insecure_port("127.0.0.1:0")
server.add_insecure_port("unix://" + sys.argv[1])
server.start()
print(port, flush=True)
time.sleep(120)
"""


def test_health_probe_speaks_grpc_health(health_probe, tmp_path):
    sock = tmp_path / "h.sock"
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(sock)], stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())
        deadline = time.time() + 10
        while not sock.exists() and time.time() < deadline:
            time.sleep(0.05)

        def probe(*args, **env):
            return subprocess.run([str(health_probe), *args], env=dict(os.environ, **env), capture_output=True,
                                  text=True, timeout=30)

        ok = probe(f"127.0.0.1:{port}")
        assert ok.returncode == 0 and "SERVING" in ok.stdout, ok.stderr
        assert probe(f"unix://{sock}").returncode == 0
        assert probe(AUGMENTD_HEALTH_ADDR=f"127.0.0.1:{port}").returncode == 0
        draining = probe(f"127.0.0.1:{port}", "--service=draining")
        assert draining.returncode == 1 and "NOT_SERVING" in draining.stdout
        unknown = probe(f"127.0.0.1:{port}", "--service=other")
        assert unknown.returncode == 1 and "NOT_FOUND" not in unknown.stdout and "code 5" in unknown.stderr
        closed = probe("127.0.0.1:1", "--timeout_s=2")
        assert closed.returncode == 1 and "rpc failed" in closed.stderr
        assert probe("--bogus").returncode == 2
    finally:
        server.kill()
        server.wait()


# --- The real server accepts every overlay's flags (catches flag names drifting from server/main.cc). ----------

def _server_binary() -> Path | None:
    candidates = [os.environ.get("AUGMENTD_BIN", ""),
                  str(Path(os.environ.get("AUGMENTD_BUILD_DIR", ROOT / "build")) / "server" / "augmentd")]
    return next((Path(c) for c in candidates if c and Path(c).is_file()), None)


def _overlay_flags(overlay: str) -> dict[str, str]:
    import yaml

    rendered = subprocess.run([str(ROOT / ".venv" / "bin" / "kubectl"), "kustomize", str(ROOT / "deploy" / overlay)],
                              capture_output=True, text=True, check=True, timeout=120).stdout
    maps = [d for d in yaml.safe_load_all(rendered) if d and d.get("kind") == "ConfigMap"
            and d["metadata"]["name"].startswith("augmentd-flags")]
    assert len(maps) == 1, overlay
    return {k: str(v) for k, v in maps[0]["data"].items()}


@pytest.mark.parametrize("overlay", ["overlays/sidecar", "overlays/per-node", "overlays/per-node-cuda-ipc",
                                     "overlays/remote"])
def test_the_server_accepts_the_overlay_flags(overlay, health_probe, tmp_path):
    binary = _server_binary()
    if binary is None:
        pytest.skip("augmentd is not built (set AUGMENTD_BIN or build into build/)")
    flags = _overlay_flags(overlay)
    assert {"listen", "device", "drain_timeout"} <= flags.keys()
    # Everything as deployed except where this machine differs: no GPU, no /run/augmentd, a free port.
    flags.update(device="cpu", listen=f"127.0.0.1:0,unix://{tmp_path}/augmentd.sock")
    if flags.get("metrics_port", "0") != "0":
        flags["metrics_port"] = "127.0.0.1:0"  # the deployed port may be taken here: the server picks a free one
    flags_dir = tmp_path / "flags.d"
    flags_dir.mkdir()
    for name, value in flags.items():
        (flags_dir / name).write_text(value + "\n")
    env = dict(os.environ, AUGMENTD_BIN=str(binary), AUGMENTD_FLAGS_DIR=str(flags_dir), AUGMENTD_MIN_SHM_MB="0")
    server = subprocess.Popen(["bash", str(ENTRYPOINT)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        lines = []
        port = None
        deadline = time.time() + 60
        while time.time() < deadline:
            line = server.stdout.readline()
            if not line:
                break
            lines.append(line)
            match = re.search(r"serving on 127\.0\.0\.1:(\d+)", line)
            if match:
                port = int(match.group(1))
                break
        assert port, "".join(lines)
        probe = subprocess.run([str(health_probe), f"127.0.0.1:{port}"], capture_output=True, text=True, timeout=30)
        assert probe.returncode == 0 and "SERVING" in probe.stdout, probe.stderr
        assert subprocess.run([str(health_probe), f"unix://{tmp_path}/augmentd.sock"],
                              capture_output=True, timeout=30).returncode == 0
        # PID 1 in the container is augmentd itself (the entrypoint execs), so SIGTERM reaches it and it drains.
        server.terminate()
        assert server.wait(timeout=60) == 0, "".join(lines) + server.stdout.read()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
