#!/usr/bin/env bash
# scripts/gpu-daext.sh — issue 23's DAExt timing on the GPU machine, one call (bench/daext_bench.py): augmentd's
# auglab_daext_gpu preset on a CUDA session, AugLab's own AugTransformsGPU, and nnUNetTrainerDAExt's CPU pipeline on
# 15 worker processes (16 cores), on the same batch (B=2, patch 128³ from nnU-Net's 205³ initial patch).
#
# Before: scripts/daext-kit.sh on the development machine (AugLab's JSONs + wheels into .whl/auglab/, SimpleITK's
# wheel into build-sitk/). Two device calls on the same warm machine (SimpleITK's 50 MiB do not fit in one carry
# with .device-kit and .whl; the first installs it into build-daext-sitk/, git-ignored, kept between calls):
#   run(carry=["build-sitk"], command="DAEXT_STAGE=sitk scripts/gpu-daext.sh")          (~1 min)
#   run(carry=[".device-kit", ".whl"], command="scripts/gpu-daext.sh")                  (~5-8 min, the build most)
# Without the first call the CPU pipeline's row says FAILED (SimpleITK stub); the two GPU rows are unaffected.
# Knobs: DAEXT_ARGS (extra bench flags, e.g. "--iters 10 --samples 2"), AUGMENTD_BIN (skip the build),
#   AUGMENTD_BUILD_DIR=/tmp/build, DAEXT_SITE=/tmp/daext-site. Results in $OUT (default /tmp/gpu-daext):
#   daext_table.md, daext_figures.jsonl, <metric>.json, env.txt, bench.log.
# CPU dry run (here): DAEXT_DEVICE=cpu DAEXT_ARGS="--patch 32 32 32 --iters 2 --workers 2 --cores 2 --samples 1" \
#   AUGMENTD_BIN=build/server/augmentd scripts/gpu-daext.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/gpu-daext}
mkdir -p "$OUT"
export OUT PYTHONUNBUFFERED=1
DEVICE=${DAEXT_DEVICE:-cuda:0}
SITE=${DAEXT_SITE:-/tmp/daext-site}
KIT=.whl/auglab
PY=${DAEXT_PYTHON:-python3}

if [ "${DAEXT_STAGE:-}" = sitk ]; then
  ls build-sitk/*.whl >/dev/null 2>&1 || { echo "no build-sitk/*.whl: run scripts/daext-kit.sh and carry build-sitk"; exit 1; }
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target build-daext-sitk \
    build-sitk/*.whl || { echo "SimpleITK install failed"; exit 1; }
  PYTHONPATH="$PWD/build-daext-sitk" "$PY" -c "import SimpleITK as s; print('SimpleITK', s.Version_VersionString())"
  exit $?
fi
[ -d build-daext-sitk/SimpleITK ] && export PYTHONPATH="$PWD/build-daext-sitk:${PYTHONPATH:-}"
# The sitk stage above carries only build-sitk/; AugLab's JSONs travel in .whl for this stage.
for f in "$KIT/transform_params_gpu.json" "$KIT/transform_params.json"; do
  [ -f "$f" ] || { echo "missing $f: run scripts/daext-kit.sh on the development machine and carry .whl"; exit 1; }
done
export AUGLAB_PARAMS_GPU_JSON=$PWD/$KIT/transform_params_gpu.json AUGLAB_PARAMS_CPU_JSON=$PWD/$KIT/transform_params.json

# 1. Kit (gRPC/protobuf debs for the build) on the GPU machine; wheels: nnU-Net's (.whl/*.whl) and AugLab's
#    (.whl/auglab/*.whl; torchvision only when the image has none).
if [ "${DEVICE%%:*}" = cuda ] && [ -z "${AUGMENTD_KIT_CMAKE_ARGS:-}" ] && [ -f .device-kit/kit-env.sh ]; then
  source .device-kit/kit-env.sh
fi
wheels=(.whl/*.whl)
for w in "$KIT"/*.whl; do
  case "$(basename "$w")" in
    torchvision-*) "$PY" -c "import torchvision" >/dev/null 2>&1 || wheels+=("$w") ;;
    *) wheels+=("$w") ;;
  esac
done
if [ "${DAEXT_INSTALL_WHEELS:-1}" = 1 ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "${wheels[@]}" \
    || { echo "wheel install failed"; exit 1; }
  export PYTHONPATH="$SITE:${PYTHONPATH:-}"
fi
if ! "$PY" -c "import SimpleITK" >/dev/null 2>&1; then
  export PYTHONPATH="$PWD/bench/e2e/stubs:${PYTHONPATH:-}"   # torchio and nnunetv2 import it; nothing here calls it
fi
export PYTHONPATH="$PWD/client/python/src:${PYTHONPATH:-}"
"$PY" - >"$OUT/env.txt" 2>&1 <<'PY'
import importlib, sys
print("python", sys.version.split()[0])
for m in ("torch", "torchvision", "numpy", "kornia", "torchio", "auglab", "nnunetv2", "batchgeneratorsv2", "grpc"):
    try:
        mod = importlib.import_module(m)
        print(m, getattr(mod, "__version__", "?"), getattr(mod, "__file__", ""))
    except Exception as err:  # noqa: BLE001
        print(m, "IMPORT FAILED:", type(err).__name__, err)
import torch
print("cuda", torch.cuda.is_available(), torch.cuda.device_count(), torch.version.cuda)
PY
cat "$OUT/env.txt"

# 2. The augmentd binary (target augmentd only).
if [ -z "${AUGMENTD_BIN:-}" ]; then
  BUILD=${AUGMENTD_BUILD_DIR:-/tmp/build}
  ZLIB_ARGS=()
  [ -e /usr/lib/x86_64-linux-gnu/libz.so.1 ] && ZLIB_ARGS=(-DZLIB_LIBRARY=/usr/lib/x86_64-linux-gnu/libz.so.1)
  if [ ! -f "$BUILD/build.ninja" ]; then
    # shellcheck disable=SC2086  # AUGMENTD_KIT_CMAKE_ARGS is a list of -D arguments
    cmake -S . -B "$BUILD" ${AUGMENTD_KIT_CMAKE_ARGS:-} -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DAUGMENTD_PYTHON="$(command -v "$PY")" "${ZLIB_ARGS[@]}" >"$OUT/build.log" 2>&1 \
      || { tail -30 "$OUT/build.log"; exit 1; }
  fi
  ninja -C "$BUILD" -j"$(nproc)" augmentd >>"$OUT/build.log" 2>&1 \
    || { grep -E "^FAILED|error:" "$OUT/build.log" | head -20; exit 1; }
  AUGMENTD_BIN="$BUILD/server/augmentd"
fi
export AUGMENTD_BIN
"$AUGMENTD_BIN" --version | tee -a "$OUT/env.txt" || { echo "augmentd binary does not run: $AUGMENTD_BIN"; exit 1; }
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv \
  | tee -a "$OUT/env.txt"

# 3. The bench (its table last).
# shellcheck disable=SC2086  # DAEXT_ARGS is a list of flags
"$PY" bench/daext_bench.py --device "$DEVICE" --out-dir "$OUT" ${DAEXT_ARGS:-} 2>"$OUT/bench.log"
rc=$?
grep -E "^\[augmentd\]|^\[daext_bench\]|Error|error" "$OUT/bench.log" | cut -c1-400 | tail -20
exit $rc
