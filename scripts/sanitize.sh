#!/usr/bin/env bash
# Sanitizer run of the CPU paths (issue 9): configures build-asan (address: ASan+UBSan) or build-tsan
# (thread: TSan) with clang and CUDA off, builds the CPU unit tests, the server and the integration tests
# (only those targets), and runs them with ctest -LE 'gpu|load'. System libraries (gRPC, protobuf, abseil, c-blosc2)
# are not instrumented; scripts/sanitize-tsan.supp silences reports whose racy accesses lie entirely inside
# them. Exits non-zero if a build fails or a test fails (a sanitizer report fails its test).
#
#   scripts/sanitize.sh address            # ASan+UBSan: unit + integration tests
#   scripts/sanitize.sh thread             # TSan
#   scripts/sanitize.sh address --unit     # unit tests only (no server subprocess)
# Environment: AUGMENTD_SANITIZE_BUILD_DIR (default build-asan / build-tsan), AUGMENTD_JOBS (default 2),
# AUGMENTD_SANITIZE_TARGETS (space-separated targets instead of the lists below).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
kind="${1:-}"
case "$kind" in
  address) build="${AUGMENTD_SANITIZE_BUILD_DIR:-build-asan}" ;;
  thread) build="${AUGMENTD_SANITIZE_BUILD_DIR:-build-tsan}" ;;
  *) echo "usage: $0 address|thread [--unit]" >&2; exit 2 ;;
esac
unit_only=0
[ "${2:-}" = "--unit" ] && unit_only=1
start=$(date +%s)

if [ ! -f "$build/build.ninja" ]; then
  mkdir -p "$build"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DAUGMENTD_WITH_CUDA=OFF \
    -DAUGMENTD_SANITIZE="$kind" -DAUGMENTD_WERROR=OFF >"$build/configure.log" 2>&1 \
    || { cat "$build/configure.log"; echo "[sanitize] configure failed" >&2; exit 1; }
fi
unit=(augment_core_test augment_dataset_test augment_device_test augmentd_server_test augmentd_proto_test
      fuzz_regression_test)
integration=(augmentd augmentd_integration_test augmentd_session_test augmentd_fault_test)
targets=("${unit[@]}")
[ "$unit_only" = 0 ] && targets+=("${integration[@]}")
# AUGMENTD_SANITIZE_TARGETS="augment_dataset_test" narrows the run (e.g. a quick TSan pass of one suite).
[ -n "${AUGMENTD_SANITIZE_TARGETS:-}" ] && read -r -a targets <<<"$AUGMENTD_SANITIZE_TARGETS"
nice -n 15 cmake --build "$build" --target "${targets[@]}" -j "${AUGMENTD_JOBS:-2}" || { echo "[sanitize] build failed" >&2; exit 1; }
built=$(( $(date +%s) - start ))

# halt_on_error: the first report fails the test; the summary names the report kind.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$root/scripts/sanitize-tsan.supp}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$root/scripts/sanitize-lsan.supp}"
# Only the tests of the targets built above: ctest registers a placeholder "<target>_NOT_BUILT" for the rest.
nice -n 15 ctest --test-dir "$build" -LE 'gpu|load' --output-on-failure -j "${AUGMENTD_JOBS:-2}" --timeout 900 \
  -E '_NOT_BUILT' 2>&1 | tee "$build/sanitize.log"
rc=${PIPESTATUS[0]}
echo "[sanitize] $kind: ctest exit $rc, build ${built} s, total $(( $(date +%s) - start )) s ($build)"
exit $rc
