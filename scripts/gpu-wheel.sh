#!/usr/bin/env bash
# scripts/gpu-wheel.sh — the binary wheel on the GPU machine, WITHOUT the device kit: installed into a fresh
# --target folder next to the image's own torch (Python 3.12, torch 2.11+cu130, no gRPC/protobuf libraries), it
# must run the end-to-end smoke: nnUNetTrainerAugmentd_smoke with CUDA IPC delivery from the packaged server.
#
# Here (the development machine), once:   scripts/gpu-wheel.sh --prepare [build-wheel.sh options, e.g. --all-archs]
#   builds .wheel/augmentd-*.whl (scripts/build-wheel.sh, reusing build/ or build-wheel-all/) and puts the cp312 wheels of nnU-Net
#   2.8.1's dependencies that the GPU image lacks into .wheel/deps/ (copied from .whl/ where present, else from
#   PyPI; sdist-only pure packages built into wheels), plus grpcio / protobuf at the pinned versions in
#   .wheel/deps/override/ (installed there only if the image's do not meet the wheel's requirements).
#   Prints the size to carry (the tree + .wheel < 64 MiB).
# GPU machine:  run(carry=[".wheel"], command="scripts/gpu-wheel.sh")
#   1. fresh target $WHEEL_SITE (/tmp/augmentd-wheel-site): pip install --no-index --no-deps of the wheel and
#      .wheel/deps/*.whl; the wheel's requirements checked against target + image (pip --target cannot see the
#      image's packages, so the check is done here with importlib.metadata + packaging);
#   2. every library the packaged executable resolves (ldd, with augmentd.packaged.environ()): each must come
#      from the wheel, the image's nvidia-* wheels or the system base;
#   3. `augmentd --help` (console script), a packaged local server on cuda:0: health + GetServerInfo;
#   4. a synthetic dataset planned and preprocessed by nnU-Net (bench/e2e/make_dataset.py, 6 cases of ~48³), then
#      `augmentd-nnunet-train 990 3d_fullres 0 -tr nnUNetTrainerAugmentd_smoke` with AUGMENTD_DELIVERY=cuda_ipc.
#   Writes $OUT/result.json ({"wheel_gpu_smoke_ok": 1|0, ...}), ldd.txt, env.txt, server.json, smoke.log; prints
#   one summary line per step and "wheel_gpu_smoke_ok=1" when everything passed. ~2-3 min on a warm machine.
# Dry run here (no GPU; the pinned venv's python as python3, deps already there):
#   PATH=$PWD/.venv/bin:$PATH WHEEL_DEVICE=cpu WHEEL_INSTALL_DEPS=0 scripts/gpu-wheel.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root="$PWD"
START=$(date +%s)
say() { echo "[gpu-wheel $(($(date +%s) - START))s] $*"; }

# Wheels of nnU-Net 2.8.1's dependencies missing from the GPU image (the set scripts/gpu-e2e.sh runs with).
DEPS="acvl-utils==0.2.6 batchgenerators==0.25.5 batchgeneratorsv2==0.3.5 connected-components-3d==4.1.1
dynamic-network-architectures==0.4.4 graphviz==0.21 ndindex==1.10.1 nibabel==5.4.2 nnunetv2==2.8.1
numexpr==2.14.2 yacs==0.1.8 blosc2==4.14.1"
OVERRIDES="grpcio==1.85.3 protobuf==7.36.2"

if [ "${1:-}" = --prepare ]; then
  set -e
  shift
  bash scripts/build-wheel.sh --out .wheel "$@"
  mkdir -p .wheel/deps/override
  rm -f .wheel/deps/*.whl .wheel/deps/override/*.whl
  download() {  # $1: folder, rest: requirements; cp312 manylinux or pure wheels only
    local dir="$1"; shift
    python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 \
      --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any -d "$dir" "$@"
  }
  for req in $DEPS; do
    name="${req%%==*}" version="${req#*==}"
    stem="$(echo "$name" | tr - _)-$version-"
    if ls .whl/"$stem"*.whl >/dev/null 2>&1; then cp .whl/"$stem"*.whl .wheel/deps/
    elif ls .device-kit/wheels/"$stem"*.whl >/dev/null 2>&1; then cp .device-kit/wheels/"$stem"*.whl .wheel/deps/
    elif ! download .wheel/deps "$req" 2>/dev/null; then  # an sdist only (pure Python): build its wheel
      python3 -m pip wheel -q --disable-pip-version-check --no-deps -w .wheel/deps "$req"
      ls .wheel/deps/"$stem"py3-none-any.whl >/dev/null || { echo "no pure wheel for $req"; exit 1; }
    fi
  done
  # shellcheck disable=SC2086  # word lists
  download .wheel/deps/override $OVERRIDES
  tree_kb=$(git ls-files -z | xargs -0 du -ck 2>/dev/null | tail -1 | cut -f1)
  wheel_kb=$(du -sk .wheel | cut -f1)
  echo "carry .wheel: $((wheel_kb / 1024)) MiB (+ tree $((tree_kb / 1024)) MiB; the limit is 64 MiB in all)"
  ls -la .wheel .wheel/deps .wheel/deps/override
  echo 'GPU machine: run(carry=[".wheel"], command="scripts/gpu-wheel.sh")'
  exit 0
fi

OUT=${OUT:-/tmp/gpu-wheel}
mkdir -p "$OUT"
WHEEL_SITE=${WHEEL_SITE:-/tmp/augmentd-wheel-site}
WORK=${WHEEL_WORK:-/tmp/gpu-wheel-work}
DEVICE=${WHEEL_DEVICE:-cuda:0}
if [ "$DEVICE" = cpu ]; then DELIVERY=host_shm TRAIN_DEVICE=cpu; else DELIVERY=cuda_ipc TRAIN_DEVICE=cuda; fi
export PYTHONUNBUFFERED=1 nnUNet_compile=False
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
unset AUGMENTD_BIN AUGMENTD_BUILD_DIR AUGMENTD_ADDRESS AUGMENTD_SERVER_ARGS PYTHONPATH
if [ -n "${LD_LIBRARY_PATH:-}" ] && grep -q kitroot <<<"$LD_LIBRARY_PATH"; then
  echo "LD_LIBRARY_PATH names the device kit ($LD_LIBRARY_PATH): this check must run without it"; exit 1
fi
wheel="$(find .wheel -maxdepth 1 -name 'augmentd-*.whl' | head -1)"
[ -n "$wheel" ] || { echo "no .wheel/augmentd-*.whl: run scripts/gpu-wheel.sh --prepare on the development machine and carry .wheel"; exit 1; }
STEP_INSTALL=fail STEP_LDD=fail STEP_HELP=fail STEP_SERVER=fail STEP_SMOKE=fail
finish() {
  local ok=0
  [ "$STEP_INSTALL$STEP_LDD$STEP_HELP$STEP_SERVER$STEP_SMOKE" = okokokokok ] && ok=1
  python3 - "$OUT/result.json" "$ok" "$wheel" "$STEP_INSTALL" "$STEP_LDD" "$STEP_HELP" "$STEP_SERVER" "$STEP_SMOKE" \
    "$(($(date +%s) - START))" <<'PY'
import json, os, sys
out, ok, wheel, *steps, seconds = sys.argv[1:]
names = ["install", "libraries", "help", "server", "smoke"]
result = {"wheel_gpu_smoke_ok": int(ok), "wheel": os.path.basename(wheel),
          "wheel_size_mb": round(os.path.getsize(wheel) / 1e6, 2), "steps": dict(zip(names, steps)),
          "seconds": int(seconds)}
server = os.path.join(os.path.dirname(out), "server.json")
if os.path.exists(server):
    result["server"] = json.load(open(server))
json.dump(result, open(out, "w"), indent=1)
print(json.dumps(result))
PY
  echo "wheel_gpu_smoke_ok=$ok"
  (cd "$OUT" && tar czf logs.tar.gz ./*.log 2>/dev/null && rm -f ./*.log)
}
trap finish EXIT

# 0. The machine.
{ python3 -c 'import sys, torch; print("python", sys.version.split()[0], sys.executable); print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())'
  python3 -m pip list --disable-pip-version-check 2>/dev/null | grep -i -E '^(grpcio|protobuf|numpy|nvidia-cuda-runtime|nvidia-cufft) '
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "system gRPC/protobuf libraries: $(find /usr/lib /lib -maxdepth 2 -name 'libgrpc*.so*' -o -maxdepth 2 -name 'libprotobuf*.so*' 2>/dev/null | wc -l)"
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

# 1. Fresh target: the wheel + the missing nnU-Net dependencies; requirements checked against target + image.
rm -rf "$WHEEL_SITE"
deps=()
[ "${WHEEL_INSTALL_DEPS:-1}" = 1 ] && deps=(.wheel/deps/*.whl)
python3 -m pip install -q --no-index --no-deps --no-compile --disable-pip-version-check --target "$WHEEL_SITE" \
  "$wheel" "${deps[@]}" >"$OUT/install.log" 2>&1 || { tail -20 "$OUT/install.log"; exit 1; }
export PYTHONPATH="$WHEEL_SITE"
python3 -c "import SimpleITK" >/dev/null 2>&1 || export PYTHONPATH="$WHEEL_SITE:$root/bench/e2e/stubs"
export PATH="$WHEEL_SITE/bin:$PATH"
unmet() {
  python3 - <<'PY'
import importlib.metadata as md
from packaging.requirements import Requirement
for r in md.distribution("augmentd").requires or []:
    req = Requirement(r)
    if req.marker and not req.marker.evaluate({"extra": ""}):
        continue
    try:
        version = md.version(req.name)
    except md.PackageNotFoundError:
        version = None
    if version is None or not req.specifier.contains(version, prereleases=True):
        print(req.name, version or "missing", req.specifier)
PY
}
missing="$(unmet)"
if [ -n "$missing" ]; then
  echo "image packages below the wheel's requirements: $(tr '\n' ';' <<<"$missing") -> installing .wheel/deps/override"
  while read -r name _; do
    ls .wheel/deps/override/"$(tr - _ <<<"$name")"-*.whl >/dev/null 2>&1 && python3 -m pip install -q --no-index \
      --no-deps --no-compile --disable-pip-version-check --target "$WHEEL_SITE" --upgrade \
      .wheel/deps/override/"$(tr - _ <<<"$name")"-*.whl >>"$OUT/install.log" 2>&1
  done <<<"$missing"
  missing="$(unmet)"
fi
[ -z "$missing" ] && STEP_INSTALL=ok || echo "unmet requirements: $missing"
say "install $STEP_INSTALL: $(basename "$wheel") into $WHEEL_SITE ($(du -sh "$WHEEL_SITE" | cut -f1))"

# 2. What the packaged executable resolves.
python3 - "$OUT/ldd.txt" <<'PY' && STEP_LDD=ok
import os, re, subprocess, sys
import augmentd.packaged as p
binary = p.binary()
assert binary, "the wheel has no packaged server"
out = subprocess.run(["ldd", binary], env=p.environ(), capture_output=True, text=True).stdout
open(sys.argv[1], "w").write(out)
site = os.path.realpath(os.path.join(os.path.dirname(binary), "..", ".."))
base = {"linux-vdso.so.1", "ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0",
        "librt.so.1", "libresolv.so.2", "libstdc++.so.6", "libgcc_s.so.1", "libz.so.1"}
bad = []
for line in out.splitlines():
    m = re.match(r"\s*(\S+)(?: => (.*?))?(?: \(0x[0-9a-f]+\))?$", line)
    name, path = m.group(1), (m.group(2) or "").strip()
    if not path and name.startswith("/"):
        name, path = os.path.basename(name), name
    real = os.path.realpath(path) if path.startswith("/") else path
    if real.startswith(os.path.join(site, "augmentd.libs") + "/"):
        continue
    if name in ("libcudart.so.13", "libcufft.so.12") and "/nvidia/cu13/lib/" in real:
        continue
    if name in base and (name == "linux-vdso.so.1" or real.startswith(("/lib", "/usr/lib"))):
        continue
    bad.append(f"{name} => {path}")
print(f"{len(out.splitlines())} libraries; CUDA runtime: "
      + next((l.split("=>")[1].split("(")[0].strip() for l in out.splitlines() if "libcudart" in l), "?"))
if bad:
    print("resolved outside the wheel / nvidia wheels / base:", *bad, sep="\n  ")
    sys.exit(1)
PY
say "libraries $STEP_LDD (ldd.txt)"

# 3. The console script and a packaged server on the GPU.
augmentd --help >"$OUT/help.log" 2>&1 && grep -q '^augmentd 0.1.0' "$OUT/help.log" && STEP_HELP=ok
say "augmentd --help $STEP_HELP ($(command -v augmentd))"
timeout 120 python3 - "$OUT/server.json" "$DEVICE" <<'PY' >"$OUT/server.log" 2>&1 && STEP_SERVER=ok
import json, sys
import augmentd
from augmentd.local_server import LocalServer
with LocalServer(device=sys.argv[2]) as server:
    with augmentd.Client(server.address) as client:
        health = str(client.health())
        info = client.server_info()
        out = {"binary": server.binary, "address": server.address, "health": health, "version": info.version,
               "devices": [d.name for d in info.devices]}
    server.stop()
json.dump(out, open(sys.argv[1], "w"), indent=1)
print(json.dumps(out))
want = "cpu" if sys.argv[2] == "cpu" else "cuda"
assert "SERVING" in health and any(want in d.lower() or "h200" in d.lower() for d in out["devices"]), out
PY
say "server $STEP_SERVER: $(tail -1 "$OUT/server.log")"

# 4. nnUNetTrainerAugmentd_smoke with CUDA IPC delivery from the packaged server.
mkdir -p "$WORK"
if timeout 300 python3 bench/e2e/make_dataset.py --work "$WORK" --cases 6 --shape 48 --np 8 >"$OUT/dataset.log" 2>&1; then
  export nnUNet_raw="$WORK/raw" nnUNet_preprocessed="$WORK/preprocessed" nnUNet_results="$WORK/results"
  rm -rf "$WORK/results"
  AUGMENTD_DELIVERY=$DELIVERY timeout 420 augmentd-nnunet-train 990 3d_fullres 0 -tr nnUNetTrainerAugmentd_smoke \
    -device "$TRAIN_DEVICE" >"$OUT/smoke.log" 2>&1
  rc=$?
  grep -E 'via local server|Training done|closed .* train|Mean Validation Dice|Error|error' "$OUT/smoke.log" | head -12
  if [ $rc = 0 ] && grep -qi "DELIVERY_KIND_$DELIVERY" "$OUT/smoke.log" && grep -q 'Training done' "$OUT/smoke.log" \
     && grep -q "($WHEEL_SITE/augmentd/_bin/augmentd)" "$OUT/smoke.log"; then
    STEP_SMOKE=ok
  else
    echo "smoke trainer exit $rc:"; tail -25 "$OUT/smoke.log"
  fi
else
  echo "dataset preparation failed:"; tail -20 "$OUT/dataset.log"
fi
say "smoke $STEP_SMOKE"
