#!/bin/bash
# scripts/gpu-ipc-check.sh — run on the GPU machine from the repository root (../shared/device/README.md): builds
# the server and its tests, runs the delivery tests on the GPU (CUDA IPC vs inline, a separate client process
# reading in place, killed-client reclamation; the gpu-labelled server tests) and, with BENCH=1, the delivery
# benchmark. Results go to $OUT (or /tmp/gpu-ipc-check); the last lines are a short summary.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-ipc-check}
BUILD=${BUILD:-build-gpu}   # inside the tree (git-ignored): a warm machine keeps it between calls
mkdir -p "$OUT"
source .device-kit/kit-env.sh
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
ZLIB_ARGS=()
[ -e /usr/lib/x86_64-linux-gnu/libz.so.1 ] && ZLIB_ARGS=(-DZLIB_LIBRARY=/usr/lib/x86_64-linux-gnu/libz.so.1)
cmake -S . -B "$BUILD" $AUGMENTD_KIT_CMAKE_ARGS -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DAUGMENTD_PYTHON="$(command -v python3)" "${ZLIB_ARGS[@]}" >"$OUT/build.log" 2>&1 \
  || { echo "configure failed"; tail -30 "$OUT/build.log"; exit 1; }
TARGETS=(${TARGETS:-augmentd augmentd_integration_gpu_test})
# BUILD_TIMEOUT (s): stop building after that long (a later call on the warm machine continues).
if ! timeout "${BUILD_TIMEOUT:-0}" ninja -C "$BUILD" -j16 -k 0 "${TARGETS[@]}" >>"$OUT/build.log" 2>&1; then
  echo "BUILD FAILURES or timeout:"; grep -E "^FAILED|error:" "$OUT/build.log" | head -20; tail -2 "$OUT/build.log"; exit 1
fi
echo "built: ${TARGETS[*]}"
export AUGMENTD_BIN="$BUILD/server/augmentd"
python3 -m pytest -q -p no:cacheprovider -rs -x tests/python/test_delivery_gpu.py >"$OUT/pytest-gpu.log" 2>&1
echo "pytest test_delivery_gpu.py exit $?"; tail -25 "$OUT/pytest-gpu.log"
"$BUILD/tests/integration/augmentd_integration_gpu_test" --gtest_brief=1 >"$OUT/integration_gpu.log" 2>&1
echo "augmentd_integration_gpu_test exit $?"; grep -E "FAILED|Failure|PASSED" "$OUT/integration_gpu.log" | head -10
[ -x "$BUILD/server/augmentd_server_test" ] && { "$BUILD/server/augmentd_server_test" --gtest_brief=1 >"$OUT/server_test.log" 2>&1; echo "augmentd_server_test exit $?"; }
if [ "${CPU_TESTS:-1}" = 1 ]; then
  python3 -m pytest -q -p no:cacheprovider tests/python/test_delivery.py >"$OUT/pytest-cpu.log" 2>&1
  echo "pytest test_delivery.py (CPU device) exit $?"; tail -3 "$OUT/pytest-cpu.log"
fi
if [ "${BENCH:-0}" = 1 ]; then
  timeout "${BENCH_TIMEOUT:-0}" python3 bench/delivery_bench.py --device cuda:0 --out "$OUT/delivery-gpu.md" \
    --iters "${ITERS:-50}" --bin "$AUGMENTD_BIN" >"$OUT/bench.log" 2>&1; echo "bench exit $?"
  cat "$OUT/delivery-gpu.md" 2>/dev/null || tail -20 "$OUT/bench.log"
fi
