# shellcheck shell=bash
# scripts/gpu-common.sh — sourced by the device scripts (scripts/gpu-kernels-check.sh, scripts/gpu-repeat-test.sh):
#   gpu_begin TAG DEFAULT_OUT   cd to the repository root, OUT (default DEFAULT_OUT) created, the kit's environment
#                               sourced (log in $OUT/kit.log), the GPU's name printed; say() prefixes "[TAG Ns]"
#   gpu_build SRC BUILD LOG TARGETS...
#                               configures SRC into BUILD (Release, Ninja, the kit's CMake arguments) and builds
#                               TARGETS within BUILD_TIMEOUT (200 s); on failure prints the errors and returns 1;
#                               GPU_BUILD_CMAKE_EXTRA: one more CMake argument (e.g. -DCMAKE_CUDA_FLAGS=...)
#   with_env SETTING COMMAND... runs COMMAND with SETTING (NAME=VALUE) in its environment, or as is for "-"
gpu_begin() {
  GPU_TAG=$1
  cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
  OUT=${OUT:-$2}
  mkdir -p "$OUT"
  START=$(date +%s)
  source .device-kit/kit-env.sh >"$OUT/kit.log" 2>&1
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
}

say() { echo "[$GPU_TAG $(( $(date +%s) - START ))s] $*"; }

gpu_build() {
  local src=$1 build=$2 log=$3
  shift 3
  local extra=()
  [ -e /usr/lib/x86_64-linux-gnu/libz.so.1 ] && extra=(-DZLIB_LIBRARY=/usr/lib/x86_64-linux-gnu/libz.so.1)
  [ -n "${GPU_BUILD_CMAKE_EXTRA:-}" ] && extra+=("$GPU_BUILD_CMAKE_EXTRA")
  # shellcheck disable=SC2086  # the kit's arguments are a word list
  cmake -S "$src" -B "$build" $AUGMENTD_KIT_CMAKE_ARGS -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DAUGMENTD_PYTHON="$(command -v python3)" "${extra[@]}" >"$log" 2>&1 \
    || { echo "configure $src failed"; tail -20 "$log"; return 1; }
  timeout "${BUILD_TIMEOUT:-200}" ninja -C "$build" -j16 -k 0 "$@" >>"$log" 2>&1 \
    || { echo "build $src failed"; grep -E "^FAILED|error" "$log" | head -20; return 1; }
}

with_env() {
  local v=$1
  shift
  if [ "$v" = - ]; then "$@"; else env "$v" "$@"; fi
}
