"""Checks a rendered augmentd overlay against the deployment rules that schemas cannot express.

Usage: python deploy/policy_check.py RENDERED.yaml   (scripts/check-deploy.sh runs it on every overlay)

For every workload that runs the `augmentd` container (in containers or, as a native sidecar, initContainers):
  * gRPC startup/readiness/liveness probes on a numeric port that augmentd listens on (--listen);
  * a GPU: nvidia.com/gpu, a DRA claim, or (per-node CUDA IPC) NVIDIA_VISIBLE_DEVICES;
  * its flags from a ConfigMap of the same render, mounted at /etc/augmentd/flags.d;
  * a PodDisruptionBudget selecting the pod; Prometheus scrape annotations (port = --metrics_port when set);
  * terminationGracePeriodSeconds > preStop sleep + --drain_timeout;
  * restrictive security: pod runAsNonRoot + seccomp RuntimeDefault; every container without privilege
    escalation, read-only root filesystem, capabilities dropped (ALL; only CHOWN may be added, and root only in a
    run-to-completion init container); hostPID/hostIPC/hostNetwork only in a namespace labelled privileged.
Prints one line per problem; exit status 1 if there is any.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

WORKLOAD_KINDS = {"Deployment", "DaemonSet", "StatefulSet", "Job", "ReplicaSet"}
FLAGS_MOUNT = "/etc/augmentd/flags.d"


def parse_duration_s(text: str) -> float | None:
    """augmentd's --drain_timeout: a plain number of seconds or an absl duration such as 30s, 500ms, 2m, 1m30s."""
    text = str(text).strip()
    try:
        return float(text)
    except ValueError:
        pass
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|ns|h|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * units[u] for n, u in parts)


def tcp_ports(listen: str) -> set[int]:
    ports = set()
    for address in str(listen).split(","):
        address = address.strip()
        if address.startswith("unix:"):
            continue
        port = address.rsplit(":", 1)[-1]
        if port.isdigit():
            ports.add(int(port))
    return ports


def selects(selector: dict, labels: dict) -> bool:
    match = (selector or {}).get("matchLabels") or {}
    return bool(match) and all(labels.get(k) == v for k, v in match.items())


def check(docs: list[dict]) -> list[str]:
    problems: list[str] = []
    configmaps = {d["metadata"]["name"]: d.get("data") or {} for d in docs if d.get("kind") == "ConfigMap"}
    pdbs = [d for d in docs if d.get("kind") == "PodDisruptionBudget"]
    privileged_ns = any(
        d.get("kind") == "Namespace"
        and (d["metadata"].get("labels") or {}).get("pod-security.kubernetes.io/enforce") == "privileged"
        for d in docs
    )
    found = 0
    for doc in docs:
        if doc.get("kind") not in WORKLOAD_KINDS:
            continue
        where = f"{doc['kind']}/{doc['metadata']['name']}"
        template = doc["spec"]["template"]
        pod = template["spec"]
        meta = template.get("metadata") or {}
        containers = [(c, False) for c in pod.get("containers") or []]
        containers += [(c, True) for c in pod.get("initContainers") or []]
        server = next((c for c, _ in containers if c["name"] == "augmentd"), None)
        if server is None:
            continue
        found += 1

        # Flags.
        volumes = {v["name"]: v for v in pod.get("volumes") or []}
        flags: dict = {}
        mount = next((m for m in server.get("volumeMounts") or [] if m["mountPath"] == FLAGS_MOUNT), None)
        cm_name = ((volumes.get(mount["name"]) or {}).get("configMap") or {}).get("name") if mount else None
        if cm_name is None:
            problems.append(f"{where}: augmentd's flags are not a ConfigMap volume mounted at {FLAGS_MOUNT}")
        elif cm_name not in configmaps:
            problems.append(f"{where}: flags ConfigMap {cm_name} is not part of this overlay")
        else:
            flags = configmaps[cm_name]
        ports = tcp_ports(flags.get("listen", ""))

        # Probes.
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            grpc = (server.get(probe) or {}).get("grpc")
            if not grpc:
                problems.append(f"{where}: augmentd has no gRPC {probe}")
            elif not isinstance(grpc.get("port"), int):
                problems.append(f"{where}: {probe}.grpc.port must be a number (named ports are not supported)")
            elif ports and grpc["port"] not in ports:
                problems.append(f"{where}: {probe} port {grpc['port']} is not a --listen TCP port {sorted(ports)}")

        # GPU.
        resources = server.get("resources") or {}
        env = {e["name"]: e.get("value") for e in server.get("env") or []}
        if not ((resources.get("limits") or {}).get("nvidia.com/gpu") or resources.get("claims")
                or env.get("NVIDIA_VISIBLE_DEVICES")):
            problems.append(f"{where}: augmentd gets no GPU (nvidia.com/gpu, a DRA claim or NVIDIA_VISIBLE_DEVICES)")

        # Disruption budget and metrics.
        labels = meta.get("labels") or {}
        if not any(selects(p["spec"].get("selector"), labels) for p in pdbs):
            problems.append(f"{where}: no PodDisruptionBudget selects its pods")
        annotations = meta.get("annotations") or {}
        if annotations.get("prometheus.io/scrape") != "true" or not annotations.get("prometheus.io/port"):
            problems.append(f"{where}: missing prometheus.io/scrape and prometheus.io/port pod annotations")
        metrics_port = str(flags.get("metrics_port", "0"))
        if metrics_port != "0" and annotations.get("prometheus.io/port") != metrics_port:
            problems.append(f"{where}: prometheus.io/port is not --metrics_port={metrics_port}")

        # Graceful termination.
        drain = parse_duration_s(flags.get("drain_timeout", "30s"))
        if drain is None:
            problems.append(f"{where}: --drain_timeout={flags.get('drain_timeout')} is not a duration")
            drain = 30.0
        pre_stop = (((server.get("lifecycle") or {}).get("preStop") or {}).get("sleep") or {}).get("seconds", 0)
        grace = pod.get("terminationGracePeriodSeconds", 30)
        if grace <= drain + pre_stop:
            problems.append(f"{where}: terminationGracePeriodSeconds {grace} must exceed preStop {pre_stop} s + "
                            f"drain timeout {drain:g} s")

        # Security.
        psc = pod.get("securityContext") or {}
        if psc.get("runAsNonRoot") is not True:
            problems.append(f"{where}: pod securityContext.runAsNonRoot is not true")
        if (psc.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
            problems.append(f"{where}: pod seccompProfile is not RuntimeDefault")
        for host in ("hostPID", "hostIPC", "hostNetwork"):
            if pod.get(host) and not privileged_ns:
                problems.append(f"{where}: {host} needs a namespace labelled pod-security enforce=privileged "
                                f"in the same overlay (and a documented reason)")
        for c, is_init in containers:
            sc = c.get("securityContext") or {}
            name = f"{where} container {c['name']}"
            if sc.get("privileged"):
                problems.append(f"{name}: privileged")
            if sc.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{name}: allowPrivilegeEscalation is not false")
            if sc.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{name}: readOnlyRootFilesystem is not true")
            caps = sc.get("capabilities") or {}
            if "ALL" not in (caps.get("drop") or []):
                problems.append(f"{name}: capabilities.drop does not include ALL")
            if set(caps.get("add") or []) - {"CHOWN"}:
                problems.append(f"{name}: adds capabilities {sorted(set(caps['add']) - {'CHOWN'})}")
            runs_to_completion = is_init and c.get("restartPolicy") != "Always"
            if sc.get("runAsUser") == 0 and not runs_to_completion:
                problems.append(f"{name}: runs as root (allowed only in a run-to-completion init container)")
            if str(c.get("image", "")).endswith(":latest") or ":" not in str(c.get("image", "")).rsplit("/", 1)[-1]:
                problems.append(f"{name}: image {c.get('image')} has no fixed tag")
    if found == 0:
        problems.append("no workload runs a container named augmentd")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    docs = [d for d in yaml.safe_load_all(Path(argv[1]).read_text()) if d]
    problems = check(docs)
    for p in problems:
        print(f"{argv[1]}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
