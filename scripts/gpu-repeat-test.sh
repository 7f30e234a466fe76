#!/bin/bash
# scripts/gpu-repeat-test.sh — a flaky GPU test, counted (run from the repository root on the GPU machine, with the
# kit carried): builds TARGET, runs the gtest FILTER repeatedly under each setting of VARIANTS (a space-separated list
# of NAME=VALUE environment settings, "-" for none) for at most SECONDS_EACH seconds each, in PARALLEL processes at
# once (default 1; 3 loads the GPU the way `ctest -j3` does), and prints, per setting, the passed / failed
# repetitions and the first three failures. SANITIZE="initcheck racecheck memcheck" then runs one repetition under
# each compute-sanitizer tool, with the setting SANITIZE_VARIANT ("-" or NAME=VALUE).
#   OUT=$OUT TARGET=augment_cuda_engine_test FILTER=CudaEngine.GraphsEqualEagerLaunches \
#     VARIANTS="- AUGMENTD_SPATIAL_VARIANT=nosplit" scripts/gpu-repeat-test.sh
set -uo pipefail
source "$(dirname "$0")/gpu-common.sh"
gpu_begin gpu-repeat /tmp/gpu-repeat
BUILD=${BUILD:-$PWD/build-gpu}
TARGET=${TARGET:-augment_cuda_engine_test}
FILTER=${FILTER:-CudaEngine.GraphsEqualEagerLaunches}
gpu_build . "$BUILD" "$OUT/build.log" "$TARGET" || exit 1
BIN=$(find "$BUILD" -name "$TARGET" -type f -perm -u+x | head -1)
say "built $BIN"
for v in ${VARIANTS:--}; do
  log="$OUT/repeat-${v//[^A-Za-z0-9_-]/_}.log"
  : >"$log"
  for p in $(seq "${PARALLEL:-1}"); do
    with_env "$v" timeout "${SECONDS_EACH:-60}" "$BIN" --gtest_filter="$FILTER" --gtest_repeat=100000 \
      >"$log.$p" 2>&1 &
  done
  wait
  for p in $(seq "${PARALLEL:-1}"); do cat "$log.$p" >>"$log" && rm -f "$log.$p"; done
  ok=$(grep -c '^\[       OK \]' "$log"); failed=$(grep -c '^\[  FAILED  \] .*(' "$log")
  say "$v: $ok passed, $failed failed repetitions (${PARALLEL:-1} processes)"
  grep -A5 -m3 "Failure" "$log"
done
for tool in ${SANITIZE:-}; do
  v=${SANITIZE_VARIANT:--}
  log="$OUT/sanitize-$tool.log"
  with_env "$v" timeout "${SANITIZE_TIMEOUT:-150}" compute-sanitizer --tool "$tool" --print-limit 20 \
    "$BIN" --gtest_filter="$FILTER" >"$log" 2>&1
  say "compute-sanitizer $tool ($v): exit $?"
  grep -E "ERROR SUMMARY|Invalid|Uninitialized|hazard|Race|========= +at|FAILED" "$log" | head -20
done
say "done"
