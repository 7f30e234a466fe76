#!/bin/bash
# scripts/gpu-bgv2-036.sh — issue 23 on the GPU machine (run from the repository root there):
#   1. builds the CUDA tests and the kernel bench into build-gpu/ ($AUGMENTD_KIT_CMAKE_ARGS);
#   2. the CUDA engine and chain tests of both batchgeneratorsv2 releases (GPU = CPU engine: the fused kernel's labels
#      identical except fp16 near-ties incl. the 0.3.6 padding label, the generic kernel's exactly):
#      CudaEngine.Bgv2Releases, CudaChainSpatial.Bgv2Releases, and every other CUDA engine / chain case (which now
#      run the default 0.3.6 vote);
#   3. bench/cuda_pipeline_bench all-on and spatial, B=2 and 8, with the 0.3.5 vote and the 0.3.6 vote in one call
#      (same machine, same run): spatial_036_kernel_ms = the all-on B=2 C=1 128³ graph time of the 0.3.6 run.
# Output ($OUT): tests.log summary lines, bench-035.jsonl / bench-036.jsonl, bench.txt (both tables), summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/gpu-bgv2-036}
mkdir -p "$OUT"
START=$(date +%s)
say() { echo "[gpu-bgv2-036 $(( $(date +%s) - START ))s] $*"; }
source .device-kit/kit-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
BUILD=build-gpu
cmake -S . -B $BUILD $AUGMENTD_KIT_CMAKE_ARGS -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DAUGMENTD_PYTHON="$(command -v python3)" >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
timeout "${BUILD_TIMEOUT:-420}" ninja -C $BUILD -j16 -k 0 augment_cuda_engine_test augment_cuda_chain_test \
  augment_cuda_chain_spatial_test cuda_pipeline_bench >>"$OUT/build.log" 2>&1 \
  || { echo "BUILD FAILURES:"; grep -E "^FAILED|error:" "$OUT/build.log" | head -20; }
say "built"
{
  timeout 300 $BUILD/augment/augment_cuda_engine_test --gtest_filter='CudaEngine.Bgv2Releases:CudaEngine.AllTransformsOn:CudaEngine.ElasticDeformation:CudaEngine.IgnoreLabelAndMasking:CudaEngine.BenchmarkShape'
  echo "engine exit $?"
  timeout 300 $BUILD/augment/augment_cuda_chain_test --gtest_filter='CudaChainSpatial.*:CudaChain.TwoSegChannelsAndImageOnly:CudaChain.Da5Preset'
  echo "chain exit $?"
  $BUILD/augment/augment_cuda_chain_spatial_test
  echo "chain spatial (host) exit $?"
} >"$OUT/tests.log" 2>&1
grep -E "^\[  (PASSED|FAILED) |exit [0-9]|\[engine bgv2|\[chain bgv2" "$OUT/tests.log" | tail -60
say "tests done"
for v in 0.3.5 0.3.6; do
  timeout 150 $BUILD/augment/kernels/cuda/cuda_pipeline_bench --bgv2 $v --modes all-on,spatial --iters "${ITERS:-200}" \
    --json "$OUT/bench-$v.jsonl" >>"$OUT/bench.txt" 2>&1
  say "bench --bgv2 $v exit $?"
done
grep -E "label vote|all-on +B=2 C=1 128|spatial +B=2 C=1 128" "$OUT/bench.txt" | tee "$OUT/summary.txt"
python3 - "$OUT" <<'EOF' | tee -a "$OUT/summary.txt"
import json, sys
out = sys.argv[1]
for v in ("0.3.5", "0.3.6"):
    for line in open(f"{out}/bench-{v}.jsonl"):
        r = json.loads(line)
        if r.get("mode") in ("all-on", "spatial") and r.get("B") == 2 and r.get("C") == 1 and "128" in r.get("shape", ""):
            print(f"bgv2 {v} {r['mode']} B=2 C=1 {r['shape']}: graph {r['ms_graph']:.4f} ms eager {r['ms_eager']:.4f} ms")
EOF
