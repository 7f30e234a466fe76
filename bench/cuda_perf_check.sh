#!/bin/bash
# bench/cuda_perf_check.sh — GPU machine, from the repository root (device/README.md): one call that checks and times
# a change of the fused CUDA kernels / CudaAugmenter graphs (issue 4, speed). Steps, in this order (each bounded in
# time; a step that no longer fits BUDGET seconds is cut short):
#   build    augment_cuda_kernels_test, augment_cuda_engine_test, cuda_pipeline_bench (build-gpu-perf/, git-ignored;
#            PERF_BUILD names another build tree, e.g. gpu-kernels-check.sh's build-gpu)
#   tests    parity: kernels vs the ATen oracle (also under each KVARIANTS spatial build) and the engine vs the CPU
#            engine + graph replay vs eager (ETEST filter), in parallel (the oracles are CPU-bound)
#   matrix   MATRIX=1: the issue's table (cuda_pipeline_bench, MODES, MITERS) + the PyTorch port (TORCH=1) → table.md
#   ncu      NCU=1: one all-on B=2 C=1 128³ batch under ncu, per-kernel time / SM / occupancy
#   timing   CudaEngine.Timing (graphs off vs on), then with AUGMENTD_CUDA_GRAPH_UPLOAD=outside (TIMING_OUTSIDE=1)
#   variants A/B of the spatial kernel builds on this lease (VARIANTS: AUGMENTD_SPATIAL_VARIANT values, "default" =
#            unset) over CONFIGS (cuda_pipeline_bench --only MODE:B:C:SHAPE), two reps
#   detail   NCU_DETAIL=1: the NCU_KERNELS kernels of one NCU_CONFIG batch (all-on:2:1:0, parameter set NCU_SET = 0:
#            every batch of a profiling run is that set, cuda_pipeline_bench --profile-set) with instruction /
#            warp-state / source counters (NCU_ARGS: more cuda_pipeline_bench arguments, e.g. "--bgv2 0.3.6"):
#            logs/ncu_sass.csv (per SASS instruction; bench/ncu_source_lines.py sums it per source line),
#            logs/ncu_cuda.csv (the source page's CUDA view)
# Logs go to $OUT/logs, tarred into $OUT/perf-logs.tar.gz at exit; the table into $OUT/table.md and *.jsonl.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/cuda-perf}
mkdir -p "$OUT/logs"
L=$OUT/logs
START=$(date +%s)
say() { echo "[perf $(( $(date +%s) - START ))s] $*"; }
# tmo N = min(N, what is left of BUDGET (default 200 s; the call's own limit must be larger) − 8).
tmo() {
  local left=$(( ${BUDGET:-200} - ($(date +%s) - START) - 8 ))
  [ "$left" -lt "$1" ] && echo $(( left > 1 ? left : 1 )) || echo "$1"
}
finish() { tar -czf "$OUT/perf-logs.tar.gz" -C "$OUT" logs 2>/dev/null && rm -rf "$L"; }
trap finish EXIT
source .device-kit/kit-env.sh >/dev/null
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used,temperature.gpu --format=csv,noheader |
  tee "$L/gpu.txt"

# build
BUILD=${PERF_BUILD:-$PWD/build-gpu-perf}
ZLIB_ARGS=()
[ -e /usr/lib/x86_64-linux-gnu/libz.so.1 ] && ZLIB_ARGS=(-DZLIB_LIBRARY=/usr/lib/x86_64-linux-gnu/libz.so.1)
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" $AUGMENTD_KIT_CMAKE_ARGS -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DAUGMENTD_PYTHON="$(command -v python3)" "${ZLIB_ARGS[@]}" >"$L/build.log" 2>&1 ||
    { tail -30 "$L/build.log"; exit 1; }
fi
timeout "$(tmo "${BUILD_TIMEOUT:-150}")" ninja -C "$BUILD" -j16 -k 0 augment_cuda_kernels_test augment_cuda_engine_test \
  cuda_pipeline_bench >>"$L/build.log" 2>&1 || { echo "BUILD FAILURES:"; grep -E "^FAILED|error" -A3 "$L/build.log" | head -30; }
say "built"
KT=$(find "$BUILD" -name augment_cuda_kernels_test -type f | head -1)
ET=$BUILD/augment/augment_cuda_engine_test
BENCH=$(find "$BUILD" -name cuda_pipeline_bench -type f | head -1)

# tests
if [ "${TESTS:-1}" = 1 ]; then
  timeout "$(tmo "${KTEST_TIMEOUT:-90}")" "$KT" >"$L/kernels_test.log" 2>&1 &
  PIDS=($!)
  for v in $(echo "${KVARIANTS:-}" | tr , ' '); do
    AUGMENTD_SPATIAL_VARIANT=$v timeout "$(tmo "${KTEST_TIMEOUT:-90}")" "$KT" >"$L/kernels_test_$v.log" 2>&1 &
    PIDS+=($!)
  done
  timeout "$(tmo "${ETEST_TIMEOUT:-90}")" "$ET" --gtest_filter="${ETEST:-CudaEngine.*:-CudaEngine.Timing}" >"$L/engine_test.log" 2>&1
  ERC=$?
  for p in "${PIDS[@]}"; do wait "$p"; done
  say "engine test exit $ERC"
  grep -E "^\[  (PASSED|FAILED)|FAILED|Failure|tests ran" "$L"/kernels_test*.log | head -20
  grep -E "^\[  (PASSED|FAILED)|FAILED|Failure|tests ran|\[graphs\]" "$L/engine_test.log" | head -20
fi

# matrix
if [ "${MATRIX:-0}" = 1 ]; then
  timeout "$(tmo "${MATRIX_TIMEOUT:-120}")" "$BENCH" --json "$OUT/augmentd.jsonl" --iters "${MITERS:-30}" \
    --modes "${MODES:-all-on,default-p,spatial}" >"$L/bench.log" 2>&1
  say "matrix exit $?"
  if [ "${TORCH:-1}" = 1 ]; then
    timeout "$(tmo "${TORCH_TIMEOUT:-90}")" python3 bench/torch_port.py --iters "${TORCH_ITERS:-10}" --json "$OUT/torch.jsonl" \
      >"$L/torch_port.log" 2>&1
    say "torch port exit $?"
  fi
  python3 bench/cuda_coverage_table.py "$OUT" >"$OUT/table.md" 2>"$L/table.err"
  head -24 "$OUT/table.md"
fi

# ncu
if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  timeout "$(tmo 40)" ncu --clock-control none --section SpeedOfLight --section Occupancy --launch-skip 35 \
    --launch-count 7 "$BENCH" --only all-on:2:1:0 --iters 5 --profile-set 0 >"$L/ncu_kernels.txt" 2>&1
  say "ncu kernels exit $?"
  grep -E "^  [A-Za-z_].*\(|Duration|Compute \(SM\) Throughput|Achieved Occupancy" "$L/ncu_kernels.txt" |
    sed 's/void augmentd::cuda::internal::<unnamed>:://; s/augmentd::cuda::internal:://g' | cut -c1-80
fi

# timing
if [ "${TIMING:-1}" = 1 ]; then
  timeout "$(tmo 60)" "$ET" --gtest_filter=CudaEngine.Timing >"$L/engine_timing.log" 2>&1
  say "engine timing exit $?"
  grep "engine timing" "$L/engine_timing.log" | sed 's/ 205^3->128^3-ish (S=\[205, 205, 205\])//'
  if [ "${TIMING_OUTSIDE:-1}" = 1 ]; then
    AUGMENTD_CUDA_GRAPH_UPLOAD=outside timeout "$(tmo 60)" "$ET" \
      --gtest_filter=CudaEngine.Timing:CudaEngine.GraphsEqualEagerLaunches >"$L/engine_timing_outside.log" 2>&1
    say "engine timing (upload outside the graph) exit $?"
    grep -E "engine timing.*graphs|PASSED|FAILED|\[graphs\]" "$L/engine_timing_outside.log" |
      sed 's/ 205^3->128^3-ish (S=\[205, 205, 205\])//'
  fi
fi

# variants
if [ -n "${VARIANTS-default,3,v5}" ]; then
  for rep in 1 2; do
    for v in $(echo "${VARIANTS-default,3,v5}" | tr , ' '); do
      for cfg in $(echo "${CONFIGS:-all-on:2:1:0,spatial:2:1:0}" | tr , ' '); do
        sv=$v
        [ "$v" = default ] && sv=""
        line=$(AUGMENTD_SPATIAL_VARIANT=$sv timeout "$(tmo 30)" "$BENCH" --only "$cfg" \
          --iters "${ITERS:-40}" 2>&1 | grep -E "eager|rror" | tail -1)
        echo "rep$rep $v $cfg | $line" | tee -a "$L/variants.log" | sed 's/ \+/ /g; s/128x128x128<-205x205x205 //' |
          cut -c1-110
      done
    done
  done
  say "variants done"
fi

# detail
if [ "${NCU_DETAIL:-0}" = 1 ] && command -v ncu >/dev/null; then
  timeout "$(tmo "${NCU_TIMEOUT:-60}")" ncu --clock-control none -k "regex:${NCU_KERNELS:-SpatialKernel}" \
    --launch-skip "${NCU_SKIP:-5}" --launch-count "${NCU_COUNT:-1}" --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section SourceCounters -o "$OUT/detail" \
    "$BENCH" --only "${NCU_CONFIG:-all-on:2:1:0}" --iters 3 --profile-set "${NCU_SET:-0}" ${NCU_ARGS:-} \
    >"$L/ncu_detail_run.txt" 2>&1
  say "ncu detail exit $?"
  if [ -f "$OUT/detail.ncu-rep" ]; then
    ncu -i "$OUT/detail.ncu-rep" --page details >"$L/ncu_detail.txt" 2>&1
    ncu -i "$OUT/detail.ncu-rep" --page source --csv --print-source sass >"$L/ncu_sass.csv" 2>&1
    ncu -i "$OUT/detail.ncu-rep" --page source --csv --print-source cuda >"$L/ncu_cuda.csv" 2>&1
    grep -E "^  [A-Za-z_].*\(|Duration|Issue Slots Busy|Registers Per|Achieved Occupancy|Executed Instructions " \
      "$L/ncu_detail.txt" | cut -c1-100 | head -20
    rm -f "$OUT/detail.ncu-rep"
  fi
fi
say "done"
