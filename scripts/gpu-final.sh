#!/bin/bash
# scripts/gpu-final.sh — one GPU-machine call that checks a whole change (run from the repository root there):
#   build everything into build-gpu/ (in the tree, git-ignored: a warm machine keeps it for the next call, e.g.
#   scripts/gpu-e2e.sh with AUGMENTD_BUILD_DIR=build-gpu), every GPU test (ctest -L gpu: CUDA engine vs CPU engine,
#   dataset GPU cache tier, CUDA IPC delivery, server device tests), the CUDA IPC delivery pytest, the delivery
#   benchmark, the dataset-mode benchmark and the GPU fault pytest (out of GPU memory at admission). Each step is
#   bounded in time; a short summary is printed last and the tables land in $OUT, every log in $OUT/logs.tar.gz.
# Knobs: BUILD_TIMEOUT (300 s), BUILD_TARGETS (all), SKIP_CTEST=1, GPU_TESTS (a ctest -R regex), SKIP_BENCH=1, DELIVERY_BENCH=0, DATASET_BENCH=0, CPU_TESTS=1 (also
# ctest -LE gpu), SKIP_PYTEST=1, CHAIN_BENCH=1 (bench/cuda_chain_bench + bgv2 DA5 on every core: issue 10's table).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/gpu-final}
mkdir -p "$OUT"
START=$(date +%s)
say() { echo "[gpu-final $(( $(date +%s) - START ))s] $*"; }
source .device-kit/kit-env.sh
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
BUILD=build-gpu
ZLIB_ARGS=()
[ -e /usr/lib/x86_64-linux-gnu/libz.so.1 ] && ZLIB_ARGS=(-DZLIB_LIBRARY=/usr/lib/x86_64-linux-gnu/libz.so.1)
cmake -S . -B $BUILD $AUGMENTD_KIT_CMAKE_ARGS -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DAUGMENTD_PYTHON="$(command -v python3)" "${ZLIB_ARGS[@]}" >"$OUT/build.log" 2>&1 \
  || { echo "configure failed"; tail -30 "$OUT/build.log"; exit 1; }
if ! timeout "${BUILD_TIMEOUT:-300}" ninja -C $BUILD -j16 -k 0 ${BUILD_TARGETS:-all} >>"$OUT/build.log" 2>&1; then
  echo "BUILD FAILURES or timeout:"; grep -E "^FAILED|error:" "$OUT/build.log" | head -20; tail -2 "$OUT/build.log"
fi
say "built"
export AUGMENTD_BIN=$PWD/$BUILD/server/augmentd AUGMENTD_BUILD_DIR=$PWD/$BUILD
GPU_RC=skipped
if [ "${SKIP_CTEST:-0}" != 1 ]; then
(cd $BUILD && timeout "${GPU_TEST_TIMEOUT:-420}" ctest -L gpu -R "${GPU_TESTS:-.}" -j4 --output-on-failure --timeout 300) >"$OUT/tests-gpu.log" 2>&1
GPU_RC=$?
grep -E "tests passed|tests failed|\(Failed\)|\*\*\*|Not Run|Timeout" "$OUT/tests-gpu.log" | tail -15
# A failing GPU test's own lines (gtest's [  FAILED  ] cases and the assertion text around them) stay outside
# logs.tar.gz, which a device call may not bring back.
grep -B2 -A12 -E "^\[  FAILED  \]|Failure$|: Failure" "$OUT/tests-gpu.log" | head -150 > "$OUT/gpu-test-failures.txt"
[ -s "$OUT/gpu-test-failures.txt" ] || rm -f "$OUT/gpu-test-failures.txt"
say "ctest -L gpu exit $GPU_RC"
fi
PY_RC=skipped
if [ "${SKIP_PYTEST:-0}" != 1 ]; then
  timeout 120 python3 -m pytest -q -p no:cacheprovider -rs tests/python/test_delivery_gpu.py >"$OUT/pytest-gpu.log" 2>&1
  PY_RC=$?
  tail -4 "$OUT/pytest-gpu.log"; say "pytest test_delivery_gpu.py exit $PY_RC"
fi
if [ "${CPU_TESTS:-0}" = 1 ]; then
  (cd $BUILD && timeout 240 ctest -LE gpu -j8 --timeout 200) >"$OUT/tests-cpu.log" 2>&1
  grep -E "tests passed|tests failed|\(Failed\)" "$OUT/tests-cpu.log" | tail -10; say "ctest -LE gpu exit $?"
fi
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  if [ "${DELIVERY_BENCH:-1}" = 1 ]; then
    timeout 120 python3 bench/delivery_bench.py --device cuda:0 --out "$OUT/delivery-gpu.md" --iters "${ITERS:-50}" \
      --bin "$AUGMENTD_BIN" >"$OUT/delivery-bench.log" 2>&1
    say "delivery bench exit $?"
  fi
  [ "${DATASET_BENCH:-1}" = 1 ] && [ -x $BUILD/bench/dataset_bench ] && timeout 200 $BUILD/bench/dataset_bench --threads "$(nproc)" --seconds "${SECONDS_PER:-4}" \
    --machine "$(head -1 "$OUT/gpu.txt" | cut -d, -f1) host, $(nproc) cores" \
    --generate /tmp/augmentd-dataset-bench --cases "${CASES:-12}" --shape "${SHAPE:-256,256,256}" \
    >"$OUT/dataset-gpu.md" 2>"$OUT/dataset-bench.log"
  say "dataset bench exit $?"
fi
if [ "${CHAIN_BENCH:-0}" = 1 ]; then  # issue 10: DA5 through the generic chain vs bgv2 DA5 on every core, same call
  { timeout 150 $BUILD/bench/cuda_chain_bench --iters "${CHAIN_ITERS:-20}"
    echo; echo "## bgv2 0.3.5 DA5 on $(nproc) cores (bench/cuda_bgv2_16cores.py --modes da5)"
    timeout 240 python3 bench/cuda_bgv2_16cores.py --modes da5 --shapes 0 --channels 1 --samples "${BGV2_SAMPLES:-6}"
  } >"$OUT/chain-bench.md" 2>&1
  say "chain bench exit $?"; tail -40 "$OUT/chain-bench.md"
fi
FAULT_RC=skipped
if [ "${SKIP_PYTEST:-0}" != 1 ]; then  # last: it fills the GPU's memory for a moment (GPU out of memory at admission)
  timeout 150 python3 -m pytest -q -p no:cacheprovider -rs tests/python/test_gpu_faults.py >"$OUT/pytest-faults.log" 2>&1
  FAULT_RC=$?
  tail -4 "$OUT/pytest-faults.log"; say "pytest test_gpu_faults.py exit $FAULT_RC"
fi
echo "== summary: ctest -L gpu $GPU_RC, delivery pytest $PY_RC, GPU fault pytest $FAULT_RC"
cat "$OUT/delivery-gpu.md" 2>/dev/null | tail -25
cat "$OUT/dataset-gpu.md" 2>/dev/null | tail -25
# The device call returns at most 8 files: the tables stay as they are, every log goes into one archive.
(cd "$OUT" && tar czf logs.tar.gz ./*.log && rm -f ./*.log)
