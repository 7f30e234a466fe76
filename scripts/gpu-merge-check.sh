#!/bin/bash
# scripts/gpu-merge-check.sh — one GPU-machine call after merging a session's branches (run from the repository
# root there), every step bounded so that the call fits its limit:
#   1. scripts/gpu-final.sh without benches: build everything into build-gpu/, every GPU test (ctest -L gpu);
#   1b. before / after: bench/cuda_pipeline_bench and cuda_chain_bench of OLD_SRC's tree and this one, interleaved;
#   2. patch mode: tests/python/test_patch_gpu.py and bench/patch_bench.py (scripts/gpu-patch.sh, reusing the build);
#   3. nnUNetTrainerAugmentdPatch end to end (scripts/gpu-e2e.sh stage patch): crop workers in processes and in
#      threads at 16 cores, processes pinned to 4 cores, and DA5 at 16 cores, each with its compute-only baseline.
# Device call (carry the kit and the wheels; ~8-9 min):
#   git archive <base> | (mkdir -p build-old-src && tar -x -C build-old-src)     # here, for step 1b
#   run(carry=[".device-kit", ".whl", "build-old-src"], command="CALL_BUDGET=540 scripts/gpu-merge-check.sh")
# Knobs: CALL_BUDGET (s, 540): later steps are skipped when too little is left; SKIP_BEFORE_AFTER=1, SKIP_PATCH=1,
#   SKIP_E2E=1, OLD_SRC (build-old-src), PIPE_MODES (all-on), CHAIN_ITERS (60), PIPE_ITERS (40),
#   E2E_CASES (6), PATCH_ITERS (40), PATCH_CASES (cuda_ipc,big,host_shm,inline),
#   E2E_RUNS ("WORKERS CORES STAGES;..."; default: the four patch-trainer variants; e.g. "- 16 2d,cascade" for
#   issue 24's configurations; each run's table is copied to $OUT/e2e-*-table.md).
# Results under $OUT: final/, patch/, e2e-<variant>/ (each with its tables and logs.tar.gz), summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/gpu-merge-check}
mkdir -p "$OUT"
START=$(date +%s)
BUDGET=${CALL_BUDGET:-540}
left() { echo $(( BUDGET - ($(date +%s) - START) )); }
say() { echo "[gpu-merge-check $(( $(date +%s) - START ))s] $*" | tee -a "$OUT/summary.txt"; }

# The Python stubs are generated at import: the image has grpcio but not grpcio-tools (first:
# ctest -L gpu includes the delivery pytest).
if ls .whl/grpcio_tools*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/gt .whl/grpcio_tools*.whl >/dev/null 2>&1
  source .device-kit/kit-env.sh
  export PYTHONPATH="/tmp/gt:${PYTHONPATH:-}"
fi

OUT=$OUT/final SKIP_BENCH=1 SKIP_PYTEST=1 GPU_TEST_TIMEOUT=${GPU_TEST_TIMEOUT:-220} BUILD_TIMEOUT=${BUILD_TIMEOUT:-240} \
  scripts/gpu-final.sh > "$OUT/final.txt" 2>&1
say "gpu-final: $(grep -E 'tests passed|summary' "$OUT/final.txt" | tr '\n' ' ')"

# Before / after on the same machine: the fused pipeline and the DA5 chain of the tree at OLD_SRC (carried; e.g.
# `git archive <base> | tar -x -C build-old-src`) against this build (scripts/gpu-kernels-check.sh, benches only).
if [ "${SKIP_BEFORE_AFTER:-0}" != 1 ] && [ -d "${OLD_SRC:-build-old-src}" ] && [ "$(left)" -gt 300 ]; then
  OUT=$OUT/kernels OLD_SRC=${OLD_SRC:-build-old-src} NEW_BUILD=$PWD/build-gpu OLD_BUILD=/tmp/build-old SKIP_CTEST=1     CHAIN_ITERS=${CHAIN_ITERS:-60} PIPE_ITERS=${PIPE_ITERS:-40} PIPE_MODES=${PIPE_MODES:-all-on}     timeout $(( $(left) - 220 )) scripts/gpu-kernels-check.sh > "$OUT/kernels.txt" 2>&1
  say "before/after benches exit $?"
fi

if [ "${SKIP_PATCH:-0}" != 1 ] && [ "$(left)" -gt 200 ]; then
  OUT=$OUT/patch AUGMENTD_GPU_BUILD=build-gpu ITERS=${PATCH_ITERS:-40} \
    BENCH_CASES=${PATCH_CASES:-cuda_ipc,big,host_shm,inline} SKIP_CPU_PATCH_TESTS=1 \
    timeout $(( $(left) - 130 )) scripts/gpu-patch.sh > "$OUT/patch.txt" 2>&1
  say "gpu-patch: $(grep -E '== summary' "$OUT/patch.txt")"
fi

if [ "${SKIP_E2E:-0}" != 1 ]; then
  export E2E_CASES=${E2E_CASES:-6} E2E_WARMUP=8 E2E_ITERS=50 E2E_RUN_SECONDS=7 AUGMENTD_BUILD_DIR=$PWD/build-gpu
  IFS=';' read -r -a runs <<< "${E2E_RUNS:-processes 16 patch;processes 4 patch;threads 16 patch;processes 16 patch_da5}"
  for v in "${runs[@]}"; do
    set -- $v
    [ "$(left)" -lt 75 ] && { say "e2e $1 $2 $3: skipped ($(left) s left)"; continue; }
    pin=(); [ "$2" != 16 ] && pin=(taskset -c 0-$(( $2 - 1 )))
    name=e2e-$1-$2c-${3//,/_}
    AUGMENTD_PATCH_WORKERS=${1/-/processes} E2E_STAGES=$3 E2E_BUDGET=$(( $(left) - 15 )) OUT=$OUT/$name \
      "${pin[@]}" scripts/gpu-e2e.sh > "$OUT/$name.txt" 2>&1
    say "e2e $1 $2 cores $3: $(grep -E 'Target \(b\)|FAILED|e2e_[a-z0-9_]*_pct' "$OUT/$name.txt" | cut -c1-200 | tr '\n' ' ')"
    [ -f "$OUT/$name/table.md" ] && cp "$OUT/$name/table.md" "$OUT/$name-table.md"
  done
fi
if [ -n "${EXTRA_STEP:-}" ] && [ "$(left)" -gt 40 ]; then  # one more bounded command (e.g. a bench), output in extra.txt
  OUT=$OUT/extra AUGMENTD_BIN=$PWD/build-gpu/server/augmentd AUGMENTD_BUILD_DIR=$PWD/build-gpu \
    timeout $(( $(left) - 20 )) bash -c "mkdir -p \$OUT; $EXTRA_STEP" > "$OUT/extra.txt" 2>&1
  say "extra step exit $?: $(tail -3 "$OUT/extra.txt" | cut -c1-200 | tr '\n' ' ')"
fi
# A device call returns at most 8 files: everything goes into all.tar.gz; the top level keeps summary.txt and the
# key tables (the rest moves to rest/, which does not come back).
for f in final/gpu-test-failures.txt kernels/summary.md patch/patch-gpu.md; do
  [ -f "$OUT/$f" ] && cp "$OUT/$f" "$OUT/$(echo "$f" | tr / -)"
done
(cd "$OUT" && tar czf /tmp/all.tar.gz --exclude='*.tar.gz' . && mkdir -p rest && find . -maxdepth 1 -mindepth 1 \
   ! -name rest ! -name summary.txt ! -name 'final-gpu-test-failures.txt' ! -name 'kernels-summary.md' \
   ! -name 'patch-patch-gpu.md' ! -name extra.txt ! -name 'e2e-*-table.md' -exec mv {} rest/ \; && mv /tmp/all.tar.gz .)
cat "$OUT/summary.txt"
