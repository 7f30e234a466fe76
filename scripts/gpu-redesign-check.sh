#!/bin/bash
# scripts/gpu-redesign-check.sh — issue 21's "no behaviour change" call on the GPU machine (run from the repository
# root there): builds the BASE commit (default: main as this branch forked from it) and this tree side by side, runs
# every GPU test on the new build, then the benchmarks of both builds interleaved in one call (old, new, old, new) so
# that drift hits both alike:
#   bench/cuda_pipeline_bench --only all-on:2:1:0   the fused kernels, all on, B=2, C=1, 128³ (median ms, eager/graph)
#   bench/cuda_chain_bench                           nnunet_da5 through the generic chain (per batch, per transform)
# and prints old/new per figure (the issue's bar: all-on B=2 within ±3 %); then, new build only,
#   bench/cuda_chain_bench --default                 nnunet_default through the fused kernels and through the generic
#                                                    chain, interleaved (retire the fused intensity path only if the
#                                                    chain is within 0.05 ms per batch, B=2, 128³)
# The old sources come from `git archive $BASE` when the tree has its .git, else from OLD_SRC (a checkout of main).
# Knobs: BASE (797507b), OLD_SRC, BUILD_TIMEOUT (420 s per build), GPU_TESTS (ctest -R regex, default all -L gpu),
# SKIP_CTEST=1, ROUNDS (2), CHAIN_ITERS (20). Output: $OUT/summary.md (+ logs.tar.gz).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/gpu-redesign}
mkdir -p "$OUT"
START=$(date +%s)
say() { echo "[gpu-redesign $(( $(date +%s) - START ))s] $*"; }
source .device-kit/kit-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
BASE=${BASE:-797507b}
OLD=${OLD_SRC:-/tmp/augmentd-old-src}
if [ -z "${OLD_SRC:-}" ]; then
  rm -rf "$OLD" && mkdir -p "$OLD"
  if ! git archive "$BASE" | tar -x -C "$OLD"; then
    echo "no git history here: set OLD_SRC to a checkout of $BASE"; exit 1
  fi
  # The kit, fetched data and the venv are untracked: share this tree's.
  for p in .device-kit .venv third_party; do [ -e "$p" ] && [ ! -e "$OLD/$p" ] && ln -s "$PWD/$p" "$OLD/$p"; done
fi
ZLIB_ARGS=()
[ -e /usr/lib/x86_64-linux-gnu/libz.so.1 ] && ZLIB_ARGS=(-DZLIB_LIBRARY=/usr/lib/x86_64-linux-gnu/libz.so.1)
TARGETS="cuda_pipeline_bench cuda_chain_bench"
NEW=${NEW_BUILD:-/tmp/build-new}   # NEW_BUILD: the new tree's build dir (e.g. build-gpu, kept by a warm machine)
case "$NEW" in /*) ;; *) NEW=$PWD/$NEW ;; esac
build() {  # src dir, build dir, targets
  cmake -S "$1" -B "$2" $AUGMENTD_KIT_CMAKE_ARGS -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DAUGMENTD_PYTHON="$(command -v python3)" "${ZLIB_ARGS[@]}" >"$OUT/build-$(basename "$2").log" 2>&1 \
    || { echo "configure $1 failed"; tail -20 "$OUT/build-$(basename "$2").log"; return 1; }
  timeout "${BUILD_TIMEOUT:-420}" ninja -C "$2" -j16 -k 0 $3 >>"$OUT/build-$(basename "$2").log" 2>&1 \
    || { echo "build $1 failed"; grep -E "^FAILED|error:" "$OUT/build-$(basename "$2").log" | head -20; return 1; }
}
build "$OLD" /tmp/build-old "$TARGETS" && say "built old ($BASE)" || exit 1
build "$PWD" "$NEW" all && say "built new" || exit 1
CT_RC=skipped
if [ "${SKIP_CTEST:-0}" != 1 ]; then
  (cd "$NEW" && timeout 480 ctest -L gpu -R "${GPU_TESTS:-.}" -j4 --output-on-failure --timeout 300) \
    >"$OUT/tests-gpu.log" 2>&1
  CT_RC=$?
  grep -E "tests passed|tests failed|\(Failed\)|Not Run|Timeout" "$OUT/tests-gpu.log" | tail -15
  say "ctest -L gpu (new) exit $CT_RC"
fi
{
  echo "# issue 21 before/after, $(head -1 "$OUT/gpu.txt"), $(date -u +%F), old = $BASE, new = this tree"
  for r in $(seq "${ROUNDS:-2}"); do
    for side in old new; do
      dir=/tmp/build-old; [ "$side" = new ] && dir=$NEW
      echo; echo "## round $r: $side — cuda_pipeline_bench --only all-on:2:1:0"
      timeout 120 "$dir"/augment/kernels/cuda/cuda_pipeline_bench --only all-on:2:1:0 --json "$OUT/pipe-$side-$r.jsonl" 2>&1 | tail -8
      echo; echo "## round $r: $side — cuda_chain_bench --iters ${CHAIN_ITERS:-20}"
      timeout 150 "$dir"/bench/cuda_chain_bench --iters "${CHAIN_ITERS:-20}" --json "$OUT/chain-$side-$r.jsonl" 2>&1 | tail -20
    done
  done
  echo; echo "## new only — cuda_chain_bench --default (fused kernels vs generic chain, same pipeline, interleaved)"
  timeout 150 "$NEW"/bench/cuda_chain_bench --default --iters "${CHAIN_ITERS:-20}" \
    --json "$OUT/default-new.jsonl" 2>&1 | tail -12
} >"$OUT/summary.md" 2>&1
say "benchmarks done"
python3 - "$OUT" <<'PY' | tee -a "$OUT/summary.md"
import glob, json, statistics, sys
out = sys.argv[1]
def rows(pattern, key):
    got = {}
    for f in glob.glob(f"{out}/{pattern}"):
        for line in open(f):
            try: j = json.loads(line)
            except ValueError: continue
            name = str(j.get(key, j.get("mode", "?")))
            for k, v in j.items():
                if (k.endswith("_ms") or k.startswith("ms_")) and isinstance(v, (int, float)):
                    got.setdefault((name, k), []).append(v)
    return got
print("\n## old vs new (median over rounds; ratio new/old)\n\n| bench | row | figure | old | new | new/old |\n|---|---|---|---:|---:|---:|")
for bench, pat, key in (("pipeline", "pipe-{}-*.jsonl", "mode"), ("chain", "chain-{}-*.jsonl", "row")):
    old, new = rows(pat.format("old"), key), rows(pat.format("new"), key)
    for k in sorted(set(old) & set(new)):
        o, n = statistics.median(old[k]), statistics.median(new[k])
        print(f"| {bench} | {k[0]} | {k[1]} | {o:.4f} | {n:.4f} | {n / o if o else float('nan'):.3f} |")
rows = {}
for line in open(f"{out}/default-new.jsonl") if __import__("os").path.exists(f"{out}/default-new.jsonl") else []:
    j = json.loads(line)
    rows.setdefault(j["row"], []).append(j["median_ms"])
print("\n## fused vs chain (new build; median of the interleaved rounds)\n\n| pipeline | fused ms | chain ms | chain − fused |\n|---|---:|---:|---:|")
for p in ("default-all-on", "default"):
    f, c = rows.get(p + " fused"), rows.get(p + " chain")
    if f and c:
        fm, cm = statistics.median(f), statistics.median(c)
        print(f"| {p} | {fm:.4f} | {cm:.4f} | {cm - fm:+.4f} |")
PY
echo "== summary: ctest -L gpu (new) $CT_RC; tables in $OUT/summary.md"
(cd "$OUT" && tar czf logs.tar.gz ./*.log && rm -f ./*.log)
