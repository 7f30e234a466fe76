#!/bin/bash
# scripts/gpu-engine-check.sh — the CUDA engine only (issue 4 engine path), on the GPU machine from the repository
# root: builds augment_cuda_engine_test + cuda_pipeline_bench, runs the engine-vs-CPU parity test (prints one
# "[engine ...]" line per case and the engine-path timing) and the raw kernel bench for the same shapes.
# The full check (every GPU test, the PyTorch port, the table) is scripts/gpu-check.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-engine-check}
mkdir -p "$OUT"
source .device-kit/kit-env.sh
BUILD=/tmp/build-engine
cmake -S . -B $BUILD $AUGMENTD_KIT_CMAKE_ARGS -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DAUGMENTD_PYTHON="$(command -v python3)" >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
ninja -C $BUILD -j16 augment_cuda_engine_test cuda_pipeline_bench >>"$OUT/build.log" 2>&1 ||
  { grep -E "error" -A3 "$OUT/build.log" | head -40; exit 1; }
echo "built in ${SECONDS}s"
$BUILD/augment/augment_cuda_engine_test >"$OUT/engine_test.log" 2>&1
TEST_RC=$?
grep -E "^\[engine|FAILED|PASSED|Failure|Expected|Which is|  b=|\[ +OK|SKIPPED" "$OUT/engine_test.log" | head -150
BENCH=$(find $BUILD -name cuda_pipeline_bench -type f | head -1)
for cfg in all-on:2:1:0 default-p:2:1:0 all-on:8:1:0 default-p:8:1:0; do
  $BENCH --only $cfg --iters 50 2>&1 | tail -1
done | tee "$OUT/bench.log"
echo "engine test exit code: $TEST_RC (${SECONDS}s)"
