#!/bin/bash
# scripts/gpu-variants.sh — issue 24 on the GPU machine: nnU-Net's variant trainers served by augmentd through their
# translated pipelines (bench/nnunet_variants_gpu.py): which run on the CUDA engine and which the server runs on its
# CPU engine (explicit lists its fused kernels do not cover), ms per batch against each trainer's own loader; plus
# the variant batch-statistics tests with sessions on the GPU. Output: $OUT/variants-gpu.md, $OUT/*.log.
#   OUT=/tmp/out scripts/gpu-variants.sh        (knobs: BUILD_TIMEOUT=300, BATCHES=40, nnUNet_n_proc_DA=12)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/gpu-variants}
mkdir -p "$OUT"
source .device-kit/kit-env.sh
export PYTHONUNBUFFERED=1 nnUNet_n_proc_DA=${nnUNet_n_proc_DA:-12}
BUILD=${AUGMENTD_BUILD_DIR:-/tmp/build}
cmake -S . -B "$BUILD" $AUGMENTD_KIT_CMAKE_ARGS -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DAUGMENTD_PYTHON="$(command -v python3)" >"$OUT/build.log" 2>&1 || { echo "configure failed"; tail -30 "$OUT/build.log"; exit 1; }
timeout "${BUILD_TIMEOUT:-300}" ninja -C "$BUILD" -j16 augmentd augment_capi >>"$OUT/build.log" 2>&1 \
  || { echo "build failed"; grep -E "^FAILED|error:" "$OUT/build.log" | head; exit 1; }
export AUGMENTD_BIN=$BUILD/server/augmentd AUGMENTD_BUILD_DIR=$BUILD
timeout 420 python3 bench/nnunet_variants_gpu.py --work /tmp/nnunet-variants --batches "${BATCHES:-40}" \
  --out "$OUT/variants-gpu.md" >"$OUT/variants-gpu.log" 2>&1
echo "bench/nnunet_variants_gpu.py exit $?"; cat "$OUT/variants-gpu.md" 2>/dev/null || tail -20 "$OUT/variants-gpu.log"
AUGMENTD_DEVICE=cuda:0 AUGMENTD_TEST_NNUNET_DATA=/tmp/nnunet-variants timeout 300 python3 -m pytest -q -p no:cacheprovider \
  tests/python/nnunet/test_variants_batches.py tests/python/nnunet/test_translate.py >"$OUT/pytest-variants.log" 2>&1
echo "pytest (sessions on cuda:0) exit $?"; tail -3 "$OUT/pytest-variants.log"
