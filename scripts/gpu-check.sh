#!/bin/bash
# scripts/gpu-check.sh — run on the GPU machine from the repository root (device/README.md):
#   builds the CUDA kernel layer, runs the GPU tests (ctest -L gpu), benchmarks augmentd's kernels against
#   the PyTorch port in the same run, and prints a short table last. Results go to $OUT (or /tmp/gpu-check).
# If the whole project does not configure (work in progress elsewhere), the kernel folder is built on its own.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
source .device-kit/kit-env.sh
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv
BUILD=/tmp/build
KDIR=augment/kernels/cuda
WHOLE=0
# The kit's zlib1g-dev carries only libz.a (non-PIC) next to a dangling libz.so: use the image's shared zlib.
ZLIB_ARGS=()
[ -e /usr/lib/x86_64-linux-gnu/libz.so.1 ] && ZLIB_ARGS=(-DZLIB_LIBRARY=/usr/lib/x86_64-linux-gnu/libz.so.1)
if cmake -S . -B $BUILD $AUGMENTD_KIT_CMAKE_ARGS -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DAUGMENTD_PYTHON="$(command -v python3)" "${ZLIB_ARGS[@]}" >"$OUT/build.log" 2>&1; then
  echo "configured the whole project"; WHOLE=1
else
  echo "whole-project configure failed (see build.log); building $KDIR on its own"
  mkdir -p /tmp/kstand
  cat >/tmp/kstand/CMakeLists.txt <<CM
cmake_minimum_required(VERSION 3.25)
project(augmentd_kernels LANGUAGES C CXX CUDA)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_ARCHITECTURES 90)
find_package(Torch REQUIRED)
find_package(GTest REQUIRED)
function(augmentd_warnings target)
  target_compile_options(\${target} PRIVATE \$<\$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror>)
endfunction()
set(AUGMENTD_HAVE_CUDA ON)
set(BUILD_TESTING ON)
enable_testing()
add_subdirectory($PWD/$KDIR kcuda)
CM
  BUILD=/tmp/build-kernels
  cmake -S /tmp/kstand -B $BUILD $AUGMENTD_KIT_CMAKE_ARGS -G Ninja -DCMAKE_BUILD_TYPE=Release >>"$OUT/build.log" 2>&1 \
    || { tail -30 "$OUT/build.log"; exit 1; }
fi
if [ $WHOLE = 1 ]; then TARGETS=(all); else TARGETS=(augment_cuda_kernels augment_cuda_kernels_test cuda_pipeline_bench); fi
# -k 0: a target that fails to build is reported, the rest still builds and is tested.
if ! ninja -C $BUILD -j16 -k 0 "${TARGETS[@]}" >>"$OUT/build.log" 2>&1; then
  echo "BUILD FAILURES (see build.log):"; grep -E "^FAILED|error:" "$OUT/build.log" | head -20
  BUILD_FAILED=1
fi
echo "built: ${TARGETS[*]}"
if [ $WHOLE = 1 ]; then
  # Every non-GPU test too: the CPU engine, dataset readers, server integration on this machine.
  (cd $BUILD && ctest -LE gpu -j8 --timeout 900) >"$OUT/tests-cpu.log" 2>&1
  CPU_RC=$?
  grep -E "tests passed|tests failed|\*\*\*Failed|\(Failed\)" "$OUT/tests-cpu.log" | tail -20
  echo "cpu tests exit code: $CPU_RC"
fi
(cd $BUILD && ctest -L gpu -V --timeout 900) >"$OUT/tests.log" 2>&1
TEST_RC=$?
grep -E "^\S*\[(spatial|zero|noise|blur|bright|contrast|lowres|gamma|all-on|default|spatial-)|^\S*[0-9]+: \[|FAILED|PASSED|tests passed|Skipped|SKIP" "$OUT/tests.log" | sed 's/^[0-9]*: //' | tail -60
if [ "${RUN_BENCH:-1}" = 1 ]; then   # RUN_BENCH=0: build + tests only
BENCH=$(find $BUILD -name cuda_pipeline_bench -type f | head -1)
$BENCH --json "$OUT/augmentd.jsonl" 2>&1 | tee "$OUT/bench.log"
# The other builds of the spatial kernel (AUGMENTD_SPATIAL_VARIANT, spatial.cu) on two configurations.
[ "${VARIANTS:-0}" = 1 ] && for cfg in spatial:2:1:0 all-on:2:1:0; do
  AUGMENTD_SPATIAL_VARIANT=3 $BENCH --only $cfg 2>&1 | sed 's/^/[3-block spatial kernel] /' | tee -a "$OUT/bench.log"
done
python3 bench/torch_port.py --json "$OUT/torch.jsonl" 2>&1 | tee "$OUT/torch_port.log"
python3 bench/make_table.py "$OUT/augmentd.jsonl" "$OUT/torch.jsonl" >"$OUT/table.md"
if [ "${PROFILE:-0}" = 1 ] && command -v ncu >/dev/null; then
  # Per-kernel speed-of-light and occupancy of every-transform-on batches (B=2, C=1, 128^3), all of parameter set 0
  # (--profile-set): 7 kernels after the first 35 launches (warm-up; an all-on batch launches 6 since s23: spatial,
  # blur, mid, 2 gamma stats, final + DS).
  ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats --launch-skip 35 \
    --launch-count 7 "$BENCH" --only all-on:2:1:0 --iters 5 --profile-set 0 >"$OUT/ncu.txt" 2>&1
  grep -E "^  [A-Za-z_].*\(|Duration|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per" \
    "$OUT/ncu.txt" | sed 's/void augmentd::cuda::internal::<unnamed>:://' | cut -c1-110
fi
fi
echo "tests exit code: $TEST_RC${BUILD_FAILED:+ (build had failures)}"
cat "$OUT/table.md" 2>/dev/null || true
