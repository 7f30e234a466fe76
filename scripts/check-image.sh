#!/usr/bin/env bash
# scripts/check-image.sh — builds docker/Dockerfile for real, without Docker or an image registry, and runs the
# server in the image:
#   1. a Debian 12 base made locally with mmdebstrap (Debian packages only), imported as localhost/debian12-base
#      (kept in the buildah storage and reused by later runs);
#   2. `buildah bud --isolation chroot` with vfs storage, --build-arg DEBIAN_IMAGE=localhost/debian12-base, target
#      runtime: the builder stage runs scripts/setup.sh, installs the CUDA 13.0 compiler from PyPI's toolkit wheels,
#      builds, and makes the wheel; the runtime stage installs that wheel into a venv;
#   3. in a container of the image (buildah run, chroot isolation): `augmentd --help`; the server through the
#      image's entrypoint on a unix socket (--device=cpu) in a folder shared with this machine; the image's
#      HEALTHCHECK command (augmentd-health) and GetServerInfo (the image's Python client) on that socket;
#   4. nnUNetTrainerAugmentd_smoke from this machine's pinned .venv against that server (AUGMENTD_ADDRESS = the
#      socket, no local server, inline delivery: the chroot has its own /dev/shm), on the synthetic Dataset987.
# Needs root (buildah with chroot isolation), buildah and mmdebstrap (apt-get install buildah mmdebstrap), network
# for Debian's and PyPI's packages. CPU-heavy: the builder compiles everything (about 15 min of 2 cores; nice'd).
#
#   scripts/check-image.sh [--keep] [--no-build]
#     --keep: leave the image (localhost/augmentd:check) in the storage; --no-build: check the kept image again
# Environment: CHECK_IMAGE_ROOT (buildah storage, default /var/tmp/augmentd-buildah), CHECK_IMAGE_WORK (socket,
# logs, dataset; default /tmp/augmentd-check-image), CUDA_ARCHITECTURES (default 90).
# Prints one line per step and "check-image: N passed, M failed" last.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root="$PWD"
START=$(date +%s)
say() { echo "[check-image $(($(date +%s) - START))s] $*"; }
store="${CHECK_IMAGE_ROOT:-/var/tmp/augmentd-buildah}"
work="${CHECK_IMAGE_WORK:-/tmp/augmentd-check-image}"
keep=0 build=1
for arg in "$@"; do
  case "$arg" in
    --keep) keep=1 ;;
    --no-build) build=0 keep=1 ;;
    *) echo "check-image: unknown argument $arg"; exit 2 ;;
  esac
done
for tool in buildah mmdebstrap; do
  command -v "$tool" >/dev/null || { echo "check-image: $tool missing (apt-get install buildah mmdebstrap)"; exit 1; }
done
bah() { buildah --root "$store/root" --runroot "$store/run" --storage-driver vfs "$@"; }
mkdir -p "$store" "$work"
passed=0 failed=0
result() {  # $1: 0 = pass, $2: what
  if [ "$1" = 0 ]; then passed=$((passed + 1)); say "PASS  $2"; else failed=$((failed + 1)); say "FAIL  $2"; fi
}
server_pid="" ctr=""
descendants() { local p; for p in $(ps -o pid= --ppid "$1"); do descendants "$p"; echo "$p"; done; }
# SIGTERM to the server itself (the innermost process under `buildah run`: the entrypoint exec'd it), as
# `docker stop` would; buildah run then exits. Returns 0 if it stopped within 30 s (else everything is killed).
stop_server() {
  [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null || return 0
  local leaf
  leaf="$(descendants "$server_pid" | head -1)"
  kill -TERM "${leaf:-$server_pid}" 2>/dev/null
  for _ in $(seq 30); do kill -0 "$server_pid" 2>/dev/null || { server_pid=""; return 0; }; sleep 1; done
  for p in $(descendants "$server_pid") "$server_pid"; do kill -KILL "$p" 2>/dev/null; done
  server_pid=""
  return 1
}
cleanup() {
  stop_server
  [ -n "$ctr" ] && bah rm "$ctr" >/dev/null 2>&1
  if [ "$keep" = 0 ]; then bah rmi -f localhost/augmentd:check >/dev/null 2>&1; fi
  echo "check-image: $passed passed, $failed failed"
}
trap cleanup EXIT

# 1. The base.
if ! bah inspect --type image localhost/debian12-base >/dev/null 2>&1; then
  say "making the Debian 12 base with mmdebstrap"
  mmdebstrap --variant=minbase --include=ca-certificates --quiet bookworm "$work/base.tar" >"$work/mmdebstrap.log" 2>&1
  rc=$?
  result $rc "base: mmdebstrap bookworm ($(du -h "$work/base.tar" 2>/dev/null | cut -f1))"
  [ $rc = 0 ] || { tail -20 "$work/mmdebstrap.log"; exit 1; }
  c=$(bah from scratch) && bah add "$c" "$work/base.tar" / >/dev/null && bah commit -q "$c" localhost/debian12-base \
    >/dev/null && bah rm "$c" >/dev/null
  rm -f "$work/base.tar"
fi

# 2. The image.
if [ "$build" = 1 ]; then
  say "buildah bud (log: $work/bud.log)"
  # pip behind a TLS-intercepting proxy: the host's CA bundle ($PIP_CERT), mounted read-only for the RUN steps.
  cert_args=()
  if [ -n "${PIP_CERT:-}" ] && [ -f "$PIP_CERT" ]; then
    cert_args=(--volume "$PIP_CERT:/run/host-ca-certificates.crt:ro" --build-arg PIP_CERT=/run/host-ca-certificates.crt)
  fi
  # --format docker keeps SHELL and HEALTHCHECK (the OCI image format has neither).
  nice -n 10 buildah --root "$store/root" --runroot "$store/run" --storage-driver vfs bud --isolation chroot --layers \
    --format docker \
    "${cert_args[@]}" --build-arg DEBIAN_IMAGE=localhost/debian12-base --build-arg "CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES:-90}" \
    --target runtime -f docker/Dockerfile -t localhost/augmentd:check . >"$work/bud.log" 2>&1
  rc=$?
  result $rc "build: docker/Dockerfile target runtime ($(grep -m1 -o 'augmentd-[^ ]*\.whl [0-9]* KiB' "$work/bud.log" || true))"
  [ $rc = 0 ] || { tail -40 "$work/bud.log"; exit 1; }
fi
say "image size: $(bah images --format '{{.Size}}' localhost/augmentd:check 2>/dev/null)"

# 3. The server in the image.
rm -rf "$work/run" && mkdir -p "$work/run" && chmod 0777 "$work/run"
ctr=$(bah from localhost/augmentd:check)
run_in() { bah run --isolation chroot --volume "$work/run:/run/augmentd" "${@}"; }
run_in "$ctr" -- augmentd --help >"$work/help.log" 2>&1 && grep -q '^augmentd 0.1.0' "$work/help.log"
result $? "augmentd --help in the image"

data="$work/nnunet"
if ! .venv/bin/python - "$data" >"$work/dataset.log" 2>&1 <<'PY'
import json, os, subprocess, sys
from pathlib import Path
sys.path.insert(0, "tests/python/dataset")
sys.path.insert(0, "client/python/src")
import synth_nnunet
from augmentd.nnunet.timing import shrink_network
from nnunetv2.utilities.crossval_split import generate_crossval_split
root = Path(sys.argv[1])
folder = root / "preprocessed" / synth_nnunet.DATASET_NAME
if not (folder / "splits_final.json").is_file():
    synth_nnunet.write_raw_dataset(root / "raw")
    env = dict(os.environ, nnUNet_raw=str(root / "raw"), nnUNet_preprocessed=str(root / "preprocessed"),
               nnUNet_results=str(root / "results"), OMP_NUM_THREADS="1")
    subprocess.run([".venv/bin/nnUNetv2_plan_and_preprocess", "-d", str(synth_nnunet.DATASET_ID), "-c", "3d_fullres",
                    "-np", "1", "-npfp", "1"], env=env, check=True)
    ids = sorted(p.name[:-4] for p in (folder / "nnUNetPlans_3d_fullres").glob("*.pkl"))
    (folder / "splits_final.json").write_text(json.dumps([{k: list(map(str, v)) for k, v in s.items()}
                                                          for s in generate_crossval_split(ids, 12345, 5)]))
plans = shrink_network(json.loads((folder / "nnUNetPlans.json").read_text()), "3d_fullres")
plans["plans_name"] = "nnUNetPlansTiny"
(folder / "nnUNetPlansTiny.json").write_text(json.dumps(plans, indent=1))
PY
then
  echo "dataset preparation failed"; tail -20 "$work/dataset.log"; exit 1
fi
chmod -R a+rX "$data"

sock=/run/augmentd/augmentd.sock
buildah --root "$store/root" --runroot "$store/run" --storage-driver vfs run --isolation chroot \
  --volume "$work/run:/run/augmentd" --volume "$data:$data:ro" --env AUGMENTD_MIN_SHM_MB=0 "$ctr" -- \
  /opt/augmentd/bin/entrypoint.sh "--listen=unix://$sock" --device=cpu "--dataset_root=$data/preprocessed" \
  >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 60); do [ -S "$work/run/augmentd.sock" ] && break; sleep 1; done
up=1
[ -S "$work/run/augmentd.sock" ] && up=0
result $up "server in the image: entrypoint, unix socket ($(grep -m1 -o 'serving on [^ ]*' "$work/server.log"))"

run_in "$ctr" -- augmentd-health "unix://$sock" >"$work/health.log" 2>&1
result $? "health (the image's HEALTHCHECK command): $(tail -1 "$work/health.log")"
run_in "$ctr" -- python -c "
import augmentd
with augmentd.Client('unix://$sock') as c:
    i = c.server_info()
    print('GetServerInfo', i.version, [d.name for d in i.devices])
" >"$work/info.log" 2>&1
result $? "GetServerInfo in the image: $(tail -1 "$work/info.log")"

# 4. The smoke trainer (this machine's nnU-Net) against the image's server.
env -u AUGMENTD_BIN PYTHONPATH="$root/client/python/src" nnUNet_raw="$data/raw" \
  nnUNet_preprocessed="$data/preprocessed" nnUNet_results="$work/results" nnUNet_compile=false OMP_NUM_THREADS=1 \
  AUGMENTD_ADDRESS="unix://$work/run/augmentd.sock" AUGMENTD_LOCAL_SERVER=never AUGMENTD_DELIVERY=inline \
  timeout 900 .venv/bin/python -m augmentd.nnunet.train 987 3d_fullres 0 -tr nnUNetTrainerAugmentd_smoke \
  -p nnUNetPlansTiny -device cpu >"$work/smoke.log" 2>&1 && grep -q 'Training done' "$work/smoke.log"
rc=$?
result $rc "smoke trainer against the image's server ($(grep -c 'via unix://' "$work/smoke.log") sessions)"
[ $rc = 0 ] || tail -20 "$work/smoke.log"
stop_server
result $? "server stops on SIGTERM within 30 s ($(grep -c 'closed after' "$work/server.log") sessions closed)"
[ "$failed" = 0 ]
