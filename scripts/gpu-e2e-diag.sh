#!/bin/bash
# scripts/gpu-e2e-diag.sh — issue 24's diagnostics on the GPU machine, as gpu-merge-check.sh's EXTRA_STEP (it sets
# OUT and AUGMENTD_BUILD_DIR=build-gpu; the e2e dataset of the run before it is reused):
#   1. bench/cuda_chain_bench --cascade: the cascade stages' GPU time per batch against the default pipeline;
#   2. scripts/gpu-daext.sh without the CPU row (DAExt on device tensors beside AugLab's own GPU pipeline);
#   3. the 2d stage again under MPS (nvidia-cuda-mps-control -d; stopped afterwards): the trainer's and the server's
#      GPU work share one MPS server instead of time-slicing two contexts.
# Example (session 9, call 1): EXTRA_STEP='EXTRA_LEFT=150 scripts/gpu-e2e-diag.sh' with E2E_RUNS="- 16 2d,cascade".
# Knobs: EXTRA_LEFT (seconds for step 3, 200), SKIP_DAEXT=1, SKIP_MPS=1.
set -u
B=${AUGMENTD_BUILD_DIR:-$PWD/build-gpu}
OUT=${OUT:-/tmp/gpu-e2e-diag}; mkdir -p "$OUT"
echo "== cascade chain bench"; timeout 60 "$B/bench/cuda_chain_bench" --cascade 2>&1 | tail -25
if [ "${SKIP_DAEXT:-0}" != 1 ]; then
  echo "== daext"; DAEXT_ARGS="--skip cpu16 --iters 20" OUT=$OUT/daext timeout 150 scripts/gpu-daext.sh 2>&1 | tail -15
  cp "$OUT/daext/daext_table.md" "$OUT/" 2>/dev/null
fi
[ "${SKIP_MPS:-0}" = 1 ] && exit 0
echo "== mps"; command -v nvidia-cuda-mps-control || { echo "no nvidia-cuda-mps-control"; exit 0; }
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d && echo "mps daemon started" || exit 0
left=${EXTRA_LEFT:-200}
E2E_STAGES=2d E2E_CONFIG_VARIANTS= E2E_PROFILE=0 E2E_BUDGET=$left OUT=$OUT/mps timeout "$left" scripts/gpu-e2e.sh \
  > "$OUT/mps.txt" 2>&1
grep -E "2d-|e2e_2d" "$OUT/mps.txt" | tail -8; cp "$OUT/mps/table.md" "$OUT/mps-table.md" 2>/dev/null
echo quit | nvidia-cuda-mps-control; tail -5 /tmp/mps-log/control.log 2>/dev/null
