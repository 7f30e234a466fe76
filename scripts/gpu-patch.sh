#!/bin/bash
# scripts/gpu-patch.sh — issue 22 on the GPU machine (run from the repository root there): builds augmentd into
# build-gpu/ (git-ignored; a warm machine reuses it), runs the patch-mode tests (input slot unit tests, the CPU
# StreamPatches suite and tests/python/test_patch_gpu.py: CUDA slots equal inline, PatchAugmenter CUDA round trip,
# 1,000 calls at the GPU-memory / /dev/shm baseline), then bench/patch_bench.py (CUDA IPC B=2 128³ and B=1 256³,
# overlapped, host shm, inline, and the unary Augment baseline in the same run). Each step is bounded in time.
# Writes $OUT/patch-gpu.md (the table), $OUT/figures.jsonl (issue 22's metric names) and $OUT/logs.tar.gz.
# Knobs: BUILD_TIMEOUT (300 s), ITERS (100), SKIP_TESTS=1, SKIP_CPU_PATCH_TESTS=1 (GPU pytest only), SKIP_BENCH=1,
#   BENCH_CASES (all), BENCH_ARGS (more patch_bench flags, e.g. --inline-baseline: the inline case without malloc
#   tuning first, same call), PROBE=1 (bench/inline_transport_probe.py after the bench: $OUT/inline-probe.md; PROBE_ARGS more flags, e.g.
#   --parts chunks: one message against PatchChunk messages only). Carry .device-kit and .whl (grpcio-tools for the stubs, installed into /tmp/gpu-patch-site when
#   python3 lacks it).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/gpu-patch}
mkdir -p "$OUT"
START=$(date +%s)
say() { echo "[gpu-patch $(( $(date +%s) - START ))s] $*"; }
source .device-kit/kit-env.sh
export PYTHONUNBUFFERED=1
# The Python stubs are generated from proto/ on first import (augmentd._stubs): grpcio-tools from a carried .whl/.
if ! python3 -c "import grpc_tools" >/dev/null 2>&1 && ls .whl/grpcio_tools-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gpu-patch-site .whl/grpcio_tools-*.whl \
    && export PYTHONPATH="/tmp/gpu-patch-site:${PYTHONPATH:-}"
fi
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
BUILD=${AUGMENTD_GPU_BUILD:-build-gpu}   # AUGMENTD_GPU_BUILD: reuse another call's build (a warm machine)
ZLIB_ARGS=()
[ -e /usr/lib/x86_64-linux-gnu/libz.so.1 ] && ZLIB_ARGS=(-DZLIB_LIBRARY=/usr/lib/x86_64-linux-gnu/libz.so.1)
cmake -S . -B $BUILD $AUGMENTD_KIT_CMAKE_ARGS -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DAUGMENTD_PYTHON="$(command -v python3)" "${ZLIB_ARGS[@]}" >"$OUT/build.log" 2>&1 \
  || { echo "configure failed"; tail -30 "$OUT/build.log"; exit 1; }
if ! timeout "${BUILD_TIMEOUT:-300}" ninja -C $BUILD -j16 -k 0 augmentd augmentd_server_test >>"$OUT/build.log" 2>&1; then
  echo "BUILD FAILURES or timeout:"; grep -E "^FAILED|error:" "$OUT/build.log" | head -20; tail -2 "$OUT/build.log"
fi
say "built"
export AUGMENTD_BIN=$PWD/$BUILD/server/augmentd AUGMENTD_BUILD_DIR=$PWD/$BUILD
UNIT_RC=skipped; PY_RC=skipped; GPU_RC=skipped; BENCH_RC=skipped
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  if [ "${SKIP_CPU_PATCH_TESTS:-0}" != 1 ]; then  # the CPU side also runs in the test command
    timeout 60 $BUILD/server/augmentd_server_test --gtest_filter='InputSlots*:SlotRing*' >"$OUT/unit.log" 2>&1
    UNIT_RC=$?; tail -1 "$OUT/unit.log"
    timeout 180 python3 -m pytest -q -p no:cacheprovider -rs tests/python/test_patch_stream.py >"$OUT/pytest-cpu.log" 2>&1
    PY_RC=$?; tail -2 "$OUT/pytest-cpu.log"
  fi
  timeout 360 python3 -m pytest -q -p no:cacheprovider -rs tests/python/test_patch_gpu.py >"$OUT/pytest-gpu.log" 2>&1
  GPU_RC=$?; tail -4 "$OUT/pytest-gpu.log"
  say "tests: unit $UNIT_RC, StreamPatches CPU pytest $PY_RC, GPU pytest $GPU_RC"
fi
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  timeout 420 python3 bench/patch_bench.py --bin "$AUGMENTD_BIN" --device cuda:0 --iters "${ITERS:-100}" \
    --cases "${BENCH_CASES:-cuda_ipc,big,overlapped,host_shm,inline,baseline}" ${BENCH_ARGS:-} \
    --machine "$(head -1 "$OUT/gpu.txt" | cut -d, -f1), $(nproc) cores" \
    --out "$OUT/patch-gpu.md" --figures "$OUT/figures.jsonl" >"$OUT/bench.log" 2>&1
  BENCH_RC=$?
  say "bench exit $BENCH_RC"
fi
PROBE_RC=skipped
if [ "${PROBE:-0}" = 1 ]; then  # the inline request path part by part (bench/inline_transport_probe.py)
  timeout 300 python3 bench/inline_transport_probe.py --bin "$AUGMENTD_BIN" --device cuda:0 ${PROBE_ARGS:-} \
    --out "$OUT/inline-probe.md" >"$OUT/probe.log" 2>&1
  PROBE_RC=$?
  say "probe exit $PROBE_RC"
  cat "$OUT/inline-probe.md" 2>/dev/null
fi
echo "== summary: unit $UNIT_RC, StreamPatches CPU pytest $PY_RC, GPU pytest $GPU_RC, bench $BENCH_RC, probe $PROBE_RC"
cat "$OUT/patch-gpu.md" 2>/dev/null
cat "$OUT/figures.jsonl" 2>/dev/null
[ "$BENCH_RC" != 0 ] && [ "$BENCH_RC" != skipped ] && tail -30 "$OUT/bench.log"
(cd "$OUT" && tar czf logs.tar.gz ./*.log && rm -f ./*.log)
