#!/bin/bash
# scripts/gpu-ncu-source.sh — issue 27's per-instruction profile of chosen kernels (run from the repository root on the
# GPU machine, with the kit carried): builds cuda_pipeline_bench into build-gpu, profiles the kernels NCU_KERNEL
# matches with `ncu --set full`, and exports what the one-line digests of gpu-kernels-check.sh leave out.
#   OUT=$OUT NCU_KERNEL='GammaStatsKernel<.int.0|MidKernel<|FinalKernel' scripts/gpu-ncu-source.sh
# Knobs: NCU_KERNEL (a regex on the name as the kernel filter sees it with --kernel-name-base demangled, e.g.
# GammaStatsKernel<(int)0, (bool)1, (bool)0> or MidKernel<(bool)0>; the reports print GammaStatsKernel<0, 1, 0>;
# default: the gamma statistics pass of mode 0),
# NCU_CONFIG (cuda_pipeline_bench --only; all-on:2:1:0), NCU_SET (the bench's parameter set; 0),
# NCU_SKIP / NCU_COUNT (matching launches skipped, then profiled; 30 / 3), NCU_CACHE (ncu --cache-control; none:
# no flush, though ncu replays each kernel and restores memory, so only the first replay pass finds L2 as the producer
# left it), NEW_CUDA_FLAGS (CMAKE_CUDA_FLAGS of the build).
# Outputs in $OUT: ncu-details.txt (every section of every profiled launch), ncu-stalls.txt (per launch, the 12
# largest warp-state ratios in cycles per issued instruction; "selected" among them is issuing, not a stall),
# ncu-source.csv (the SASS of each launch with its stall samples, where this ncu can print it; ncu prints each launch
# twice, so sum one copy), ncu-raw.csv (every metric of every launch; whether it carries the PM sampling section's
# timeline, up to 1.5 µs a sample, is not checked yet), ncu-export.err, build.log and ncu-run.txt.
set -uo pipefail
source "$(dirname "$0")/gpu-common.sh"
gpu_begin gpu-ncu /tmp/gpu-ncu
NEW_BUILD=${NEW_BUILD:-$PWD/build-gpu}
GPU_BUILD_CMAKE_EXTRA="-DCMAKE_CUDA_FLAGS=${NEW_CUDA_FLAGS:-}" gpu_build "$PWD" "$NEW_BUILD" "$OUT/build.log" \
  cuda_pipeline_bench && say "built" || exit 1
rep=/tmp/gpu-ncu-report
rm -f "$rep.ncu-rep"  # a warm machine may hold an earlier call's report
timeout 300 ncu --clock-control none --cache-control "${NCU_CACHE:-none}" --kernel-name-base demangled \
  -k "regex:${NCU_KERNEL:-GammaStatsKernel<.int.0}" --launch-skip "${NCU_SKIP:-30}" --launch-count "${NCU_COUNT:-3}" \
  --set full --import-source no -f -o "$rep" \
  "$NEW_BUILD"/augment/kernels/cuda/cuda_pipeline_bench --only "${NCU_CONFIG:-all-on:2:1:0}" --iters 8 \
  --profile-set "${NCU_SET:-0}" >"$OUT/ncu-run.txt" 2>&1 || echo "ncu exit $? (see ncu-run.txt)"
if [ ! -s "$rep.ncu-rep" ] || grep -q "No kernels were profiled" "$OUT/ncu-run.txt"; then
  echo "ncu profiled no kernel: NCU_KERNEL matched nothing, or fewer launches than NCU_SKIP (see ncu-run.txt)"
  exit 1
fi
say "profiled"
ncu -i "$rep.ncu-rep" --page details >"$OUT/ncu-details.txt" 2>&1 || echo "ncu details exit $?"
ncu -i "$rep.ncu-rep" --page raw --csv >"$OUT/ncu-raw.csv" 2>>"$OUT/ncu-export.err" || echo "ncu raw exit $?"
python3 - "$OUT/ncu-raw.csv" >"$OUT/ncu-stalls.txt" 2>&1 <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head, units, data = rows[0], rows[1], rows[2:]
name = head.index("Kernel Name")
prefix = "smsp__average_warps_issue_stalled_"
for r in data:
    print(r[name][:120])
    stalls = [(float(r[i].replace(",", "")), head[i][len(prefix):]) for i in range(len(head))
              if head[i].startswith(prefix) and head[i].endswith("_per_issue_active.ratio") and r[i] not in ("", "n/a")]
    for v, k in sorted(stalls, reverse=True)[:12]:
        print(f"  {v:8.3f}  {k.replace('_per_issue_active.ratio', '')}")
PY
ncu -i "$rep.ncu-rep" --page source --csv --print-source sass >"$OUT/ncu-source.csv" 2>>"$OUT/ncu-export.err" \
  || echo "ncu source page exit $? (this ncu may not print it)"
say "exported"
cat "$OUT/ncu-stalls.txt"
