#!/usr/bin/env bash
# Configures and builds augmentd (Release, Ninja) into ${AUGMENTD_BUILD_DIR:-build}.
# Assumes scripts/setup.sh ran (the README commands call it). Extra arguments go to cmake's configure step,
# e.g. scripts/build.sh -DAUGMENTD_WITH_CUDA=OFF.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${AUGMENTD_BUILD_DIR:-build}"
start=$(date +%s)
if [ ! -f "$build/build.ninja" ] || [ $# -gt 0 ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${AUGMENTD_BUILD_TYPE:-Release}" "$@" >"$build.configure.log" 2>&1 \
    || { cat "$build.configure.log"; echo "[build] configure failed" >&2; exit 1; }
fi
# One compile job per core; LibTorch translation units need ~1.5 GB each, which 24 GB covers.
cmake --build "$build" -j "$(nproc)"
echo "[build] done in $(( $(date +%s) - start )) s ($build)"
