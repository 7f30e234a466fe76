#!/bin/bash
# scripts/gpu-dataset-bench.sh — dataset mode on the GPU machine (issue 6), from the repository root, in one call:
#   builds dataset_bench + augment_dataset_gpu_test, runs the GPU cache-tier test (crop kernel vs the CPU crop,
#   LoadBatchToDevice vs LoadBatch, budgets/eviction, device prefetch), then the benchmark on a synthetic
#   nnU-Net dataset (.b2nd, written in C++): cold from disk with 16 threads, hot from the host cache, hot from
#   the GPU cache, memory per case. Prints the markdown table last; everything also goes to $OUT.
# Knobs: CASES (16), SHAPE (256,256,256), THREADS (16), SECONDS (10), DATASET (a real preprocessed dataset folder
# instead of the synthetic one).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-dataset-bench}
mkdir -p "$OUT"
source .device-kit/kit-env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
BUILD=${BUILD:-/tmp/build-dataset}
ZLIB_ARGS=()
[ -e /usr/lib/x86_64-linux-gnu/libz.so.1 ] && ZLIB_ARGS=(-DZLIB_LIBRARY=/usr/lib/x86_64-linux-gnu/libz.so.1)
if [ ! -f $BUILD/build.ninja ]; then
  cmake -S . -B $BUILD $AUGMENTD_KIT_CMAKE_ARGS -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DAUGMENTD_PYTHON="$(command -v python3)" "${ZLIB_ARGS[@]}" >"$OUT/build.log" 2>&1 ||
    { echo "configure failed:"; tail -30 "$OUT/build.log"; exit 1; }
fi
ninja -C $BUILD -j16 dataset_bench augment_dataset_gpu_test >>"$OUT/build.log" 2>&1 ||
  { echo "build failed:"; grep -E "error|FAILED" -A3 "$OUT/build.log" | head -40; exit 1; }
echo "built in ${SECONDS}s"
(cd $BUILD && ctest -R augment_dataset_gpu_test -L gpu --output-on-failure --timeout 300) >"$OUT/gpu_test.log" 2>&1
TEST_RC=$?
grep -E "tests passed|tests failed|Failure|Expected|Which is|\[  FAILED|\[  SKIPPED|\[  PASSED" "$OUT/gpu_test.log" | head -40
echo "gpu test exit code: $TEST_RC"
ARGS=(--threads "${THREADS:-16}" --seconds "${SECONDS_PER:-10}" --machine "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) host, $(nproc) cores")
if [ -n "${DATASET:-}" ]; then
  ARGS+=(--dataset "$DATASET")
else
  ARGS+=(--generate /tmp/augmentd-dataset-bench --cases "${CASES:-16}" --shape "${SHAPE:-256,256,256}")
fi
$BUILD/bench/dataset_bench "${ARGS[@]}" >"$OUT/table.md" 2>"$OUT/bench.log"
BENCH_RC=$?
tail -5 "$OUT/bench.log"
echo "bench exit code: $BENCH_RC (${SECONDS}s total)"
cat "$OUT/table.md"
