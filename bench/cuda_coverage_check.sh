#!/bin/bash
# bench/cuda_coverage_check.sh — GPU machine, from the repository root (device/README.md): the CUDA engine's coverage
# work (issues 4 and 10) in steps, so that each visit fits the per-call limit:
#   STEPS=test        build augment_cuda_engine_test + cuda_pipeline_bench, run the engine-vs-CPU parity test
#                     (FILTER = a gtest filter, default all)
#   STEPS=ktest       build augment_cuda_kernels_test, run the kernels-vs-ATen parity test (KFILTER, default all)
#   STEPS=bench       cuda_pipeline_bench over issue 4's matrix + elastic + per-transform modes (MODES, ITERS)
#   STEPS=torch       the straightforward batched PyTorch port (bench/torch_port.py), same shapes
#   STEPS=bgv2        batchgeneratorsv2 0.3.5 on every core (bench/cuda_bgv2_16cores.py; BGV2_MODES, BGV2_SAMPLES,
#                     BGV2_SHAPES, BGV2_CHANNELS)
#   STEPS=ncu         one every-transform-on batch (B=2, C=1, 128^3) under ncu: per-kernel time, SM/memory throughput
#   e.g. STEPS=test,bench bench/cuda_coverage_check.sh;  STEPS=bench,torch,bgv2 bench/cuda_coverage_check.sh
# The build directory (build-gpu-coverage/, git-ignored) survives between calls on a warm machine. Results land in
# $OUT (*.jsonl, logs); bench/cuda_coverage_table.py turns them into the markdown table.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/cuda-coverage}
STEPS=",${STEPS:-test,bench},"
mkdir -p "$OUT"
source .device-kit/kit-env.sh >/dev/null
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv,noheader
BUILD=$PWD/build-gpu-coverage
if [[ $STEPS == *,test,* || $STEPS == *,bench,* || $STEPS == *,ktest,* ]]; then
  ZLIB_ARGS=()
  [ -e /usr/lib/x86_64-linux-gnu/libz.so.1 ] && ZLIB_ARGS=(-DZLIB_LIBRARY=/usr/lib/x86_64-linux-gnu/libz.so.1)
  if [ ! -f $BUILD/build.ninja ]; then
    cmake -S . -B $BUILD $AUGMENTD_KIT_CMAKE_ARGS -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DAUGMENTD_PYTHON="$(command -v python3)" "${ZLIB_ARGS[@]}" >"$OUT/build.log" 2>&1 ||
      { tail -30 "$OUT/build.log"; exit 1; }
  fi
  TARGETS=(cuda_pipeline_bench)
  [[ $STEPS == *,test,* ]] && TARGETS+=(augment_cuda_engine_test)
  [[ $STEPS == *,ktest,* ]] && TARGETS+=(augment_cuda_kernels_test)
  # -k 0: a target that fails (e.g. work in progress elsewhere) does not stop the others.
  ninja -C $BUILD -j16 -k 0 "${TARGETS[@]}" >>"$OUT/build.log" 2>&1 ||
    { echo "BUILD FAILURES:"; grep -E "^FAILED|error" -A3 "$OUT/build.log" | head -40; }
  echo "built in ${SECONDS}s"
fi
if [[ $STEPS == *,ktest,* ]]; then
  timeout "${KTEST_TIMEOUT:-120}" $(find $BUILD -name augment_cuda_kernels_test -type f | head -1) --gtest_filter="${KFILTER:-*}" \
    >"$OUT/kernels_test.log" 2>&1
  echo "kernels test exit code: $? (${SECONDS}s)"
  grep -E "^\[  (PASSED|FAILED)|FAILED|Failure|Expected|Which is|tests ran" "$OUT/kernels_test.log" | head -40
fi
if [[ $STEPS == *,test,* ]]; then
  timeout "${TEST_TIMEOUT:-300}" $BUILD/augment/augment_cuda_engine_test --gtest_filter="${FILTER:-*}" \
    >"$OUT/engine_test.log" 2>&1
  echo "engine test exit code: $? (${SECONDS}s)"
  grep -E "^\[engine|FAILED|PASSED|Failure|Expected|Which is|  b=|\[ +OK|SKIPPED" "$OUT/engine_test.log" | head -120
fi
if [[ $STEPS == *,bench,* ]]; then
  BENCH=$(find $BUILD -name cuda_pipeline_bench -type f | head -1)
  $BENCH --json "$OUT/augmentd.jsonl" --iters "${ITERS:-50}" \
    --modes "${MODES:-all-on,default-p,all-on+elastic,spatial,only-elastic,only-noise,only-blur,only-brightness,only-contrast,only-lowres,only-gamma,only-mirror}" \
    2>&1 | tee "$OUT/bench.log"
  echo "bench done (${SECONDS}s)"
fi
if [[ $STEPS == *,ncu,* ]] && command -v ncu >/dev/null; then
  BENCH=$(find $BUILD -name cuda_pipeline_bench -type f | head -1)
  # Skips the first NCU_SKIP kernel launches (warm-up; an all-on batch launches 6 kernels since s23) and profiles
  # NCU_COUNT, every batch parameter set 0 (--profile-set: the same set whatever the kernels a batch launches).
  timeout 90 ncu --clock-control none --section SpeedOfLight --section Occupancy --launch-skip "${NCU_SKIP:-35}" \
    --launch-count "${NCU_COUNT:-7}" "$BENCH" --only all-on:2:1:0 --iters 5 --profile-set 0 >"$OUT/ncu.txt" 2>&1
  grep -E "^  [A-Za-z_].*\(|Duration|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy" "$OUT/ncu.txt" |
    sed 's/void augmentd::cuda::internal::<unnamed>:://' | cut -c1-100
  echo "ncu done (${SECONDS}s)"
fi
if [[ $STEPS == *,torch,* ]]; then
  python3 bench/torch_port.py --iters "${TORCH_ITERS:-30}" --json "$OUT/torch.jsonl" 2>&1 | tee "$OUT/torch_port.log"
  echo "torch port done (${SECONDS}s)"
fi
if [[ $STEPS == *,bgv2,* ]]; then
  python3 bench/cuda_bgv2_16cores.py --samples "${BGV2_SAMPLES:-2}" --modes "${BGV2_MODES:-default-p,all-on,da5}" \
    --shapes "${BGV2_SHAPES:-0,1}" --channels "${BGV2_CHANNELS:-1,4}" \
    --json "$OUT/bgv2.jsonl" 2>&1 | tee "$OUT/bgv2.log"
  echo "bgv2 done (${SECONDS}s)"
fi
[ -f "$OUT/augmentd.jsonl" ] && python3 bench/cuda_coverage_table.py "$OUT" | tee "$OUT/table.md"
echo "total ${SECONDS}s"
