#!/bin/bash
# scripts/gpu-closing.sh — session 10's last device call, every step bounded (run from the repository root on the GPU
# machine, carry .device-kit and .whl, right after `DAEXT_STAGE=sitk scripts/gpu-daext.sh` on the same warm machine):
#   1. scripts/gpu-daext.sh, all three rows in one call (augmentd's auglab_daext_gpu preset on device tensors,
#      AugLab's own GPU pipeline, nnUNetTrainerDAExt's CPU pipeline on 16 cores); builds augmentd into /tmp/build;
#   2. the chain's GPU test binary (GPU = CPU, every chain case incl. the cascade's) and the cascade's per-stage and
#      per-kernel times (cuda_chain_bench --cascade --stage-times, --kernel-times);
#   3. 3d_cascade_fullres end to end under MPS (scripts/gpu-e2e.sh E2E_MPS=1: compute only and augmentd both under
#      the same daemon).
# Session 10's run of it: the cold /tmp/build took ~130 s of the DAExt step, which then ran out inside the CPU row.
# So it reuses build-gpu/ when an earlier call on the same warm machine left one (scripts/gpu-merge-check.sh builds
# it): run it right after such a call (and the sitk stage) instead of on a fresh machine.
# Knobs: CLOSING_BUILD (build-gpu if it holds server/augmentd, else /tmp/build), T_DAEXT (200 s), T_CHAIN (60 s),
# T_E2E (120 s). Results in $OUT: summary.txt, daext_table.md, chain.txt,
# mps-table.md, all.tar.gz (the rest).
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/gpu-closing}; mkdir -p "$OUT"
START=$(date +%s)
B=${CLOSING_BUILD:-$([ -x build-gpu/server/augmentd ] && echo "$PWD/build-gpu" || echo /tmp/build)}
say() { echo "[gpu-closing $(( $(date +%s) - START ))s] $*" | tee -a "$OUT/summary.txt"; }
# The Python stubs are generated at import: the image has grpcio but not grpcio-tools.
if ls .whl/grpcio_tools*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/gt .whl/grpcio_tools*.whl >/dev/null 2>&1
  export PYTHONPATH="/tmp/gt:${PYTHONPATH:-}"
fi
OUT=$OUT/daext DAEXT_ARGS="--iters 20" AUGMENTD_BUILD_DIR=$B timeout "${T_DAEXT:-200}" scripts/gpu-daext.sh \
  > "$OUT/daext.txt" 2>&1
say "daext exit $?: $(grep -E '^\| (daext|auglab)' "$OUT/daext/daext_table.md" 2>/dev/null | cut -d'|' -f2,3 | tr '\n' ' ')"
cp "$OUT/daext/daext_table.md" "$OUT/" 2>/dev/null
source .device-kit/kit-env.sh >/dev/null 2>&1
{
  timeout 50 ninja -C "$B" -j16 augment_cuda_chain_test cuda_chain_bench > "$OUT/chain-build.log" 2>&1 \
    || { echo "chain build failed"; grep -E "^FAILED|error" "$OUT/chain-build.log" | head; }
  timeout 20 "$B"/augment/augment_cuda_chain_test 2>&1 | grep -E "^\[  (PASSED|FAILED) |^\[==========\]|Failure|Expected|Which is" | head -40
  timeout 25 "$B"/bench/cuda_chain_bench --cascade --stage-times 2>&1 | tail -45
  timeout 15 "$B"/bench/cuda_chain_bench --kernel-times 2>&1 | tail -30
} > "$OUT/chain.txt" 2>&1
say "chain: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/chain.txt" | tr '\n' ' ')"
left=$(( ${T_DAEXT:-200} + ${T_CHAIN:-60} + ${T_E2E:-120} - ($(date +%s) - START) ))
[ "$left" -gt "${T_E2E:-120}" ] && left=${T_E2E:-120}
E2E_MPS=1 E2E_STAGES=cascade E2E_CONFIG_VARIANTS= E2E_PROFILE=0 E2E_CASES=6 E2E_WARMUP=8 E2E_ITERS=50 \
  E2E_RUN_SECONDS=7 E2E_BUDGET=$(( left - 5 )) AUGMENTD_BUILD_DIR=$B OUT=$OUT/mps \
  timeout "$left" scripts/gpu-e2e.sh > "$OUT/mps.txt" 2>&1
say "e2e cascade under MPS exit $?: $(grep -E 'Target|e2e_cascade' "$OUT/mps.txt" | cut -c1-220 | tr '\n' ' ')"
cp "$OUT/mps/table.md" "$OUT/mps-table.md" 2>/dev/null
(cd "$OUT" && tar czf /tmp/all.tar.gz --exclude='*.tar.gz' daext mps daext.txt mps.txt chain-build.log 2>/dev/null; \
  rm -rf daext mps daext.txt mps.txt chain-build.log; mv /tmp/all.tar.gz .)
cat "$OUT/summary.txt"
