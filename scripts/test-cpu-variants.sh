#!/usr/bin/env bash
# Runs the Python suites that compare augmentd with a numeric reference (bgv2 / nnU-Net / torch / TorchIO / AugLab)
# once per CPU code path the references can take, so that anyone can check on their own machine that the verdict
# does not depend on the CPU (issue 19). One pytest invocation per variant; prints a table variant -> pytest
# summary and exits non-zero if any variant fails. Run by hand (not in CI).
set -uo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/test-cpu-variants.sh [-j N] [--with-distributions] [--list] [VARIANT...] [-- PYTEST_ARGS...]

Runs tests/python/parity, tests/python/engine, tests/python/test_mri_parity.py and
tests/python/test_auglab_parity.py (the statistical *_distributions.py files only with --with-distributions:
they compare sampled parameters, not voxels) under each variant below; VARIANT names pick a subset.

  as-is          this machine's environment (tests/python/conftest.py pins MKL_CBWR=COMPATIBLE)
  mkl-sse4_2     MKL_ENABLE_INSTRUCTIONS=SSE4_2, MKL unpinned (AUGMENTD_TEST_MKL_CBWR=off)
  mkl-avx2       MKL_ENABLE_INSTRUCTIONS=AVX2,   MKL unpinned
  mkl-avx512     MKL_ENABLE_INSTRUCTIONS=AVX512, MKL unpinned
  mkl-cbwr       MKL_CBWR=COMPATIBLE
  blas-fp64      MKL unpinned, and every float32 torch.matmul of the references accumulates in float64
                 (AUGMENTD_TEST_REFERENCE_MATMUL=fp64): another CPU's BLAS rounding, emulated
  aten-default   ATEN_CPU_CAPABILITY=default (torch's scalar CPU kernels)
  aten-avx2      ATEN_CPU_CAPABILITY=avx2
  aten-avx512    ATEN_CPU_CAPABILITY=avx512
  threads-1      OMP_NUM_THREADS=1, torch on 1 thread (AUGMENTD_TEST_TORCH_THREADS=1)
  threads-2      OMP_NUM_THREADS=2, torch on 2 threads
  openblas-unset OPENBLAS_CORETYPE unset (numpy's OpenBLAS picks its kernel by CPU)
  openblas-set   OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE if set, else Haswell

  numpy-x86-v2   NPY_DISABLE_CPU_FEATURES=X86_V3,X86_V4,AVX512_ICL: numpy's SSE4.2-level kernels
  numpy-x86-v3   NPY_DISABLE_CPU_FEATURES=X86_V4,AVX512_ICL: numpy's AVX2-level kernels

A variant that asks for more than the CPU has falls back to what it has (MKL, ATen and OpenBLAS all clamp), so
every variant runs on any x86-64 machine. Each pytest runs with -q -x, N (default 2) variants at a time; its log
is kept in a temporary folder whose path is printed. The library comes from $AUGMENTD_BUILD_DIR (default build/), as in scripts/test.sh.
EOF
}

with_dist=0
list=0
jobs=2
picked=()
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --with-distributions) with_dist=1 ;;
    --list) list=1 ;;
    -j) shift; jobs="${1:-}"; [[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "-j needs a count" >&2; exit 2; } ;;
    --) shift; extra=("$@"); break ;;
    -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    *) picked+=("$1") ;;
  esac
  shift
done

# name | environment (NAME=value sets, -NAME unsets)
coretype="${OPENBLAS_CORETYPE:-Haswell}"
variants=(
  "as-is|"
  "mkl-sse4_2|MKL_ENABLE_INSTRUCTIONS=SSE4_2 AUGMENTD_TEST_MKL_CBWR=off"
  "mkl-avx2|MKL_ENABLE_INSTRUCTIONS=AVX2 AUGMENTD_TEST_MKL_CBWR=off"
  "mkl-avx512|MKL_ENABLE_INSTRUCTIONS=AVX512 AUGMENTD_TEST_MKL_CBWR=off"
  "mkl-cbwr|MKL_CBWR=COMPATIBLE"
  "blas-fp64|AUGMENTD_TEST_REFERENCE_MATMUL=fp64 AUGMENTD_TEST_MKL_CBWR=off"
  "aten-default|ATEN_CPU_CAPABILITY=default"
  "aten-avx2|ATEN_CPU_CAPABILITY=avx2"
  "aten-avx512|ATEN_CPU_CAPABILITY=avx512"
  "threads-1|OMP_NUM_THREADS=1 AUGMENTD_TEST_TORCH_THREADS=1"
  "threads-2|OMP_NUM_THREADS=2 AUGMENTD_TEST_TORCH_THREADS=2"
  "openblas-unset|-OPENBLAS_CORETYPE"
  "openblas-set|OPENBLAS_CORETYPE=$coretype"
  "numpy-x86-v2|NPY_DISABLE_CPU_FEATURES=X86_V3,X86_V4,AVX512_ICL"
  "numpy-x86-v3|NPY_DISABLE_CPU_FEATURES=X86_V4,AVX512_ICL"
)
if [ ${#picked[@]} -gt 0 ]; then
  sel=()
  for p in "${picked[@]}"; do
    hit=0
    for v in "${variants[@]}"; do [ "${v%%|*}" = "$p" ] && { sel+=("$v"); hit=1; }; done
    [ $hit -eq 1 ] || { echo "unknown variant $p (see --list)" >&2; exit 2; }
  done
  variants=("${sel[@]}")
fi
if [ $list -eq 1 ]; then for v in "${variants[@]}"; do printf '%-15s %s\n' "${v%%|*}" "${v#*|}"; done; exit 0; fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py=.venv/bin/python
[ -x "$py" ] || { echo "no $py: run scripts/setup.sh first" >&2; exit 2; }
build="${AUGMENTD_BUILD_DIR:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
export AUGMENTD_BUILD_DIR="$build"
[ -f "$build/augment/libaugment_capi.so" ] || [ -n "${AUGMENTD_CAPI_LIB:-}" ] || {
  echo "no $build/augment/libaugment_capi.so: build first (scripts/build.sh) or set AUGMENTD_BUILD_DIR" >&2; exit 2; }

suites=(tests/python/parity tests/python/engine tests/python/test_mri_parity.py tests/python/test_auglab_parity.py)
if [ $with_dist -eq 1 ]; then
  suites+=(tests/python/test_mri_distributions.py)
else
  suites+=(--ignore=tests/python/parity/test_distributions.py --ignore=tests/python/parity/test_da5_distributions.py
           --ignore=tests/python/engine/test_engine_distributions.py)
fi

logs=$(mktemp -d /tmp/augmentd-cpu-variants.XXXXXX)
echo "[cpu-variants] CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "[cpu-variants] AVX-512 flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep '^avx512' | tr '\n' ' ')"
echo "[cpu-variants] logs in $logs"
start=$(date +%s)
run_variant() {  # name, environment: one pytest; leaves $logs/<name>.log, .rc, .s
  local name="$1" kv envs=() t0
  for kv in $2; do
    case "$kv" in -*) envs+=(-u "${kv#-}") ;; *) envs+=("$kv") ;; esac
  done
  t0=$(date +%s)
  env "${envs[@]}" "$py" -m pytest "${suites[@]}" -q -x -rf -p no:cacheprovider "${extra[@]}" >"$logs/$name.log" 2>&1
  echo $? >"$logs/$name.rc"
  echo $(( $(date +%s) - t0 )) >"$logs/$name.s"
  echo "[cpu-variants] $name: rc $(cat "$logs/$name.rc"), $(cat "$logs/$name.s") s"
}
for v in "${variants[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  run_variant "${v%%|*}" "${v#*|}" &
done
wait
echo
failed=0
printf '%-15s %-4s %-62s %s\n' variant rc environment "pytest summary"
for v in "${variants[@]}"; do
  name="${v%%|*}"
  rc=$(cat "$logs/$name.rc" 2>/dev/null || echo 1)
  summary=$(grep -E '[0-9]+ (passed|failed|error|errors|skipped)' "$logs/$name.log" | tail -1 | sed 's/=//g;s/^ *//;s/ *$//')
  [ -n "$summary" ] || summary="(no summary: see $logs/$name.log)"
  [ "$rc" -eq 0 ] || failed=1
  printf '%-15s %-4s %-62s %s\n' "$name" "$([ "$rc" -eq 0 ] && echo ok || echo FAIL)" "${v#*|}" "$summary"
  [ "$rc" -eq 0 ] || grep -E '^FAILED|^ERROR' "$logs/$name.log" | head -5 | sed 's/^/    /'
done
echo "[cpu-variants] ${#variants[@]} variants ($jobs at a time), $(( $(date +%s) - start )) s: \
$([ $failed -eq 0 ] && echo 'every variant passed' || echo 'SOME VARIANTS FAILED')"
exit $failed
