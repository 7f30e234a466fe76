#!/bin/bash
# scripts/gpu-kernels-check.sh — issue 27's device call (run from the repository root on the GPU machine, with the
# kit carried): builds the old tree (OLD_SRC, default build-old-src = `git archive main` of the fork point, carried
# beside the kit) and this tree side by side (bench targets only for the old one), runs the GPU tests of what the
# change touches on the new build, then the benchmarks of both builds interleaved (old, new per round):
#   bench/cuda_chain_bench --iters CHAIN_ITERS        nnunet_da5 through the generic chain: da5 median / p90, and the
#                                                     marginal cost of every DA5 transform (+median_filter#i)
#   cuda_pipeline_bench --modes PIPE_MODES             the fused kernels: B ∈ {2, 8}, C ∈ {1, 4}, 128³ and 80×160²
# Output: $OUT/summary.md, the JSON lines of every run in $OUT/jsonl.tar.gz (bench/ab_table.py reads them unpacked),
# logs in $OUT/logs.tar.gz.
# Knobs: PIPE_MODES=none skips the pipeline benchmark, OLD_SRC, OLD_BUILD / NEW_BUILD (build-old / build-gpu in the tree), SKIP_OLD=1 (reuse build-old from a previous call on a warm machine), GPU_TESTS (ctest -R regex),
# TEST_TARGETS, SKIP_CTEST=1, ROUNDS (1), CHAIN_ITERS (100), CHAIN_ARGS (e.g. --stage-times), PIPE_ITERS (100), PIPE_MODES (all-on,default-p),
# PIPE_ARGS (e.g. --channels 1,2,4; --only MODE:B:C:SHAPE,... without PIPE_MODES runs every mode it names;
# --digests 1 hashes each row's outputs, which bench/ab_table.py compares across
# sides: a switch meant to keep every bit), SEG_ARGS (each side's pipeline rows again on another seg, e.g. "--seg-block 32
# --seg-labels 3", as side <side>_seg: bench/ab_table.py --sides old_seg,new_seg),
# BUILD_TIMEOUT (200 s per build), SIDES ("old new"; "new" benches this tree alone, with SKIP_OLD=1; a side may carry
# one environment setting, "new@AUGMENTD_SPATIAL_VARIANT=nosplit"; CHAIN_ITERS=0 skips the chain bench),
# EXTRA_BUILDS ("NAME=FLAGS ...": this tree built again, bench targets only, into build-NAME with CMAKE_CUDA_FLAGS=FLAGS,
# one word per variant, its flags joined by commas, e.g. "bf=-DAUGMENTD_EXP_X=1" or
# "rb=-DAUGMENTD_A=1,-DAUGMENTD_B=1"; NAME not old, new or gpu; a side NAME benches it, e.g.
# SIDES="old new bf"; the kernels' own switches: -DAUGMENTD_CROPS_BUILD=0 or 1, -DAUGMENTD_PLAIN035=0,
# -DAUGMENTD_GAMMA_FUSION=0, session 21; -DAUGMENTD_SLICE_SHARE=0, session 22; -DAUGMENTD_PAD_FIRST_TUNED=0 and
# -DAUGMENTD_PF_PACKED_KEYS=1, session 34 (timed in session 35: not kept); -DAUGMENTD_PF_FEW=0, -DAUGMENTD_PF_POOL=0,
# -DAUGMENTD_PF_FLUSH_NOINLINE=0, session 35 (session 35's 256-entry ring switch was removed in session 37);
# -DAUGMENTD_PF_FEW_OOB=0, session 37; -DAUGMENTD_CHAINED=0, plain launches of the chain's passes, session 42;
# -DAUGMENTD_UNIFORM_VOTE=0, the 0.3.5 vote without the one-label warp path, session 44;
# (session 45's -DAUGMENTD_NARROW_TRIGGER=1 lost in session 46 and was removed; session 47's -DAUGMENTD_FUSED_COMMIT and
# session 50's -DAUGMENTD_FAST_TAIL were kept in session 50 and are gone; session 50's -DAUGMENTD_MODE2_TRIGGER=1 and
# -DAUGMENTD_MODE2_WAIT_TRIGGER=1 lost and were removed; session 51's -DAUGMENTD_SPATIAL_PERSIST=1 and
# -DAUGMENTD_RELEASE_TICKET=1 lost or measured nothing and were removed, and -DAUGMENTD_BRICK_Z=4 was removed unmeasured;
# session 52's -DAUGMENTD_BRICK_GRID=1 was kept and is gone; session 53's -DAUGMENTD_BLUR_EARLY=1, -DAUGMENTD_BLUR_NARROW=1
# and -DAUGMENTD_CARVEOUT_PCT=N were reverted, timed in session 54 and not kept, and live in commit 225a988;
# session 55's -DAUGMENTD_BLUR_ASYNC=1, the blur's halo planes by cp.async, was kept and is gone; its =2 (four stages,
# the plane loop unrolled by four) never ran and lives in commit 4830412; -DAUGMENTD_BLUR_PAD_COPIES=1, session 55, not
# timed yet; -DAUGMENTD_BLUR_VEC_COPIES=1, session 56, the halo rows in 16-byte copies, not timed yet);
# sessions 28-30's five were kept in session 32 and are gone),
# NEW_CUDA_FLAGS (the new build and its
# tests with these CUDA flags: a switch's GPU tests), PROFILE=1 (ncu per kernel of PROFILE_CONFIGS, default
# all-on:2:1:0,all-on:2:4:0, parameter set PROFILE_SET (0): speed of light, occupancy, warp states, issue slots;
# $OUT/ncu-*.txt and a one-line-per-kernel digest in summary.md; PROFILE_CACHE="all none" profiles with ncu's cache
# flush and without it, the second as ncu-CFG-cache-none.txt; PROFILE_KERNEL=REGEX profiles only the kernels it matches,
# PROFILE_SKIP (84; 20 with PROFILE_KERNEL) / PROFILE_COUNT (12) / PROFILE_ITERS (8) the launches skipped, profiled and the bench's iterations;
# PROFILE_SEG=1 profiles each configuration again with SEG_ARGS, as ncu-CFG-seg.txt; PROFILE_SIDES="old new" profiles the
# old build too, as ncu-CFG-old.txt: a same-call profile of both), EXTRA_PARALLEL=1 (the extra builds
# at the same time as each other and the new build: they share the machine's cores, but each waits mostly on its own
# longest file), CLOCK_BUILDS
# ("NAME ...": extra builds made with -DAUGMENTD_BLOCK_CLOCKS=1, whose cuda_pipeline_bench then records every block's
# timeline with CLOCK_ARGS, default "--only all-on:2:1:0 --profile-set 0 --iters 20", and CLOCK_ENV (VAR=VALUE words) in
# its environment: bench/block_clocks.py's table
# per build in summary.md, the CSVs in clocks.tar.gz, one more returned file; NOTES.md s47).
#   OUT=$OUT scripts/gpu-kernels-check.sh   # H200: builds 45 + 35 s, tests ≈ 15 s, chain bench ≈ 2 s and pipeline bench ≈ 45 s per build (CHAIN_ITERS=60, PIPE_ITERS=40)
set -uo pipefail
for cache in ${PROFILE_CACHE:-all}; do  # ncu --cache-control values, space-separated
  case $cache in all | none) ;; *) echo "PROFILE_CACHE: '$cache' is not all or none (a space-separated list)"; exit 2 ;; esac
done
for pside in ${PROFILE_SIDES:-new}; do  # the builds PROFILE=1 profiles, space-separated
  case $pside in old | new) ;; *) echo "PROFILE_SIDES: '$pside' is not old or new (a space-separated list)"; exit 2 ;; esac
done
source "$(dirname "$0")/gpu-common.sh"
gpu_begin gpu-kernels /tmp/gpu-kernels
OLD=${OLD_SRC:-build-old-src}
case "$OLD" in /*) ;; *) OLD=$PWD/$OLD ;; esac
OLD_BUILD=${OLD_BUILD:-$PWD/build-old}
NEW_BUILD=${NEW_BUILD:-$PWD/build-gpu}
BENCH_TARGETS="cuda_pipeline_bench cuda_chain_bench"
TEST_TARGETS=${TEST_TARGETS:-cuda_da5_stages_test augment_cuda_chain_test cuda_auglab_stages_test}
build() {  # src dir, build dir, targets (one word list)
  # shellcheck disable=SC2086
  gpu_build "$1" "$2" "$OUT/build-$(basename "$2").log" $3
}
if [ "${SKIP_OLD:-0}" != 1 ]; then
  build "$OLD" "$OLD_BUILD" "$BENCH_TARGETS" && say "built old" || exit 1
fi
# The extra builds first: with EXTRA_PARALLEL=1 they build in the background while the new build runs.
set -f  # EXTRA_BUILDS entries are words, not globs
extra_pids=()
for extra in ${EXTRA_BUILDS:-}; do  # NAME=FLAGS: one word (no spaces), its flags joined by commas
  name=${extra%%=*}
  case $extra in
    *=*) ;;
    *) echo "EXTRA_BUILDS: '$extra' is not NAME=FLAGS"; exit 1 ;;
  esac
  case $name in
    old | new | gpu | "" | *[!A-Za-z0-9_-]*) echo "EXTRA_BUILDS: '$name' is reserved or not a plain name"; exit 1 ;;
  esac
  flags=${extra#*=}
  if [ "${EXTRA_PARALLEL:-0}" = 1 ]; then
    (GPU_BUILD_CMAKE_EXTRA="-DCMAKE_CUDA_FLAGS=${flags//,/ }" build "$PWD" "$PWD/build-$name" "$BENCH_TARGETS" \
      && say "built $name") &
    extra_pids+=($!)
    continue
  fi
  GPU_BUILD_CMAKE_EXTRA="-DCMAKE_CUDA_FLAGS=${flags//,/ }" build "$PWD" "$PWD/build-$name" "$BENCH_TARGETS" \
    && say "built $name" || exit 1
done
set +f
# NEW_CUDA_FLAGS: the new build (its tests too) with CMAKE_CUDA_FLAGS, e.g. a kernel's bench switch turned on; always
# passed, empty too, so that a reused build folder does not keep an earlier call's flags in its cache.
GPU_BUILD_CMAKE_EXTRA="-DCMAKE_CUDA_FLAGS=${NEW_CUDA_FLAGS:-}" build "$PWD" "$NEW_BUILD" "$BENCH_TARGETS $TEST_TARGETS" \
  && say "built new${NEW_CUDA_FLAGS:+ with $NEW_CUDA_FLAGS}"
new_rc=$?
extra_failed=0
for pid in ${extra_pids[@]+"${extra_pids[@]}"}; do wait "$pid" || extra_failed=1; done  # all of them, then the verdict
[ "$new_rc" = 0 ] && [ "$extra_failed" = 0 ] || exit 1
CT_RC=skipped
if [ "${SKIP_CTEST:-0}" != 1 ]; then
  (cd "$NEW_BUILD" && timeout "${CTEST_TIMEOUT:-90}" ctest -L gpu -R "${GPU_TESTS:-cuda_da5_stages_test|augment_cuda_chain_test|cuda_auglab_stages_test}" -j3 \
    --output-on-failure --timeout 80) >"$OUT/tests-gpu.log" 2>&1
  CT_RC=$?
  grep -E "tests passed|tests failed|\(Failed\)|Not Run|Timeout|Passed|Failed" "$OUT/tests-gpu.log" | tail -15
  say "ctest exit $CT_RC"
fi
pipe_run() {  # LABEL JSON_TAG [EXTRA ARGS...]: the pipeline rows of one side (bench, setting) in round r (the loop's)
  local label=$1 json=$2 w drop=0
  local args=()
  shift 2
  # PIPE_ARGS, less `--digests V` for a build older than session 29 (an unknown option exits 2: no rows at all).
  set -f
  for w in ${PIPE_ARGS:-}; do
    if [ "$drop" = 1 ]; then drop=0; continue; fi
    if [ "$w" = --digests ] && ! grep -q -- --digests "$bench"; then
      drop=1; echo "($label: this build's cuda_pipeline_bench has no --digests: timed without them)"; continue
    fi
    args+=("$w")
  done
  set +f
  # --modes limits the configurations that --only names too, so the default modes are left out when PIPE_ARGS has
  # --only and PIPE_MODES is not set (session 32's `only-blur:2:1:0` was dropped without a word by the default).
  local modes=()
  if [ -n "${PIPE_MODES:-}" ] || [[ " ${PIPE_ARGS:-} " != *" --only "* ]]; then
    modes=(--modes "${PIPE_MODES:-all-on,default-p}")
  fi
  echo; echo "## round $r: $label — cuda_pipeline_bench${modes[*]:+ ${modes[*]}}${args[*]:+ ${args[*]}}${*:+ $*}"
  with_env "$setting" timeout 150 "$bench" ${modes[@]+"${modes[@]}"} --iters "${PIPE_ITERS:-100}" \
    ${args[@]+"${args[@]}"} "$@" --json "$OUT/pipe-$json-$r.jsonl" 2>&1 | tail -40
}
{
  echo "# issue 27 before/after, $(head -1 "$OUT/gpu.txt"), $(date -u +%F), old = $OLD, new = this tree${NEW_CUDA_FLAGS:+ with CUDA flags $NEW_CUDA_FLAGS}"
  for r in $(seq "${ROUNDS:-1}"); do
    for spec in ${SIDES:-old new}; do
      # A side is a build (old / new), optionally with one environment setting: new@AUGMENTD_CHAINED_LAUNCH=0.
      side=${spec%%@*}; setting=-; [ "$spec" != "$side" ] && setting=${spec#*@}
      tag=${spec//[^A-Za-z0-9_-]/_}
      case $side in old) dir=$OLD_BUILD ;; new) dir=$NEW_BUILD ;; *) dir=$PWD/build-$side ;; esac
      if [ "${CHAIN_ITERS:-100}" != 0 ]; then
        echo; echo "## round $r: $spec — cuda_chain_bench --iters ${CHAIN_ITERS:-100}"
        with_env "$setting" timeout 240 "$dir"/bench/cuda_chain_bench --iters "${CHAIN_ITERS:-100}" ${CHAIN_ARGS:-} \
          --json "$OUT/chain-$tag-$r.jsonl" 2>&1 | tail -60
      fi
      [ "${PIPE_MODES:-all-on,default-p}" = none ] && continue
      bench="$dir"/augment/kernels/cuda/cuda_pipeline_bench
      pipe_run "$spec" "$tag"
      [ -n "${SEG_ARGS:-}" ] || continue
      # The same rows on another seg (SEG_ARGS, e.g. "--seg-block 32 --seg-labels 3": nearer real masks than the
      # default, the label vote's worst case) as side "<side>_seg". A build older than session 27 ignores options it
      # does not know and would time the default seg under that label: such a side is skipped.
      if ! grep -q -- --seg-block "$bench"; then
        echo; echo "## round $r: ${spec}_seg skipped: this build's cuda_pipeline_bench has no --seg-block"
        continue
      fi
      # shellcheck disable=SC2086  # SEG_ARGS is a word list
      pipe_run "${spec}_seg" "${tag}_seg" $SEG_ARGS
    done
  done
  # The A/B table of this call (every side and round; with --digests 1 in PIPE_ARGS also whether each side computed the
  # first side's bits), so that summary.md holds the verdict without unpacking jsonl.tar.gz.
  if compgen -G "$OUT/pipe-*.jsonl" >/dev/null || compgen -G "$OUT/chain-*.jsonl" >/dev/null; then
    echo; echo "## A/B table (bench/ab_table.py)"
    # In SIDES' order, the first side the baseline ("base new": the change against base, not the other way round).
    order=""
    for spec in ${SIDES:-old new}; do
      tag=${spec//[^A-Za-z0-9_-]/_}
      order="$order,$tag"
      [ -n "${SEG_ARGS:-}" ] && order="$order,${tag}_seg"
    done
    python3 "$(dirname "$0")/../bench/ab_table.py" --sides "${order#,}" "$OUT" 2>&1
  fi
  clock_args=${CLOCK_ARGS:---only all-on:2:1:0 --profile-set 0 --iters 20}
  for name in ${CLOCK_BUILDS:-}; do
    # The timeline of a build with -DAUGMENTD_BLOCK_CLOCKS=1 (its batch times carry the recording's cost).
    echo; echo "## block clocks, build $name: cuda_pipeline_bench $clock_args"
    if [ ! -x "$PWD/build-$name/augment/kernels/cuda/cuda_pipeline_bench" ]; then
      echo "CLOCK_BUILDS: no build-$name (name it in EXTRA_BUILDS with -DAUGMENTD_BLOCK_CLOCKS=1)"; continue
    fi
    # shellcheck disable=SC2086  # clock_args and CLOCK_ENV (VAR=VALUE words for the recording runs) are word lists
    env ${CLOCK_ENV:-} timeout 150 "$PWD/build-$name/augment/kernels/cuda/cuda_pipeline_bench" $clock_args \
      --block-clocks "$OUT/clocks-$name.csv" 2>&1 | tail -12
    if [ -s "$OUT/clocks-$name.csv" ]; then python3 "$(dirname "$0")/../bench/block_clocks.py" "$OUT/clocks-$name.csv" 2>&1
    else echo "build $name recorded no block (see above)"; fi
  done
  if [ "${PROFILE:-0}" = 1 ]; then
    # PROFILE_SEG=1 (with SEG_ARGS): every configuration profiled again on SEG_ARGS' seg, as ncu-CFG-seg.txt.
    segs=(plain)
    [ "${PROFILE_SEG:-0}" = 1 ] && [ -n "${SEG_ARGS:-}" ] && segs+=(seg)
    kfilter=()
    [ -n "${PROFILE_KERNEL:-}" ] && kfilter=(-k "regex:$PROFILE_KERNEL")
    # With a kernel filter ncu's --launch-skip counts only the matching launches: a kernel launched once per batch
    # runs about 56 times in `--iters 8`, so the default skip is then 20.
    skip=${PROFILE_SKIP:-84} count=${PROFILE_COUNT:-12}
    [ -n "${PROFILE_KERNEL:-}" ] && skip=${PROFILE_SKIP:-20}
    for pside in ${PROFILE_SIDES:-new}; do
      pbuild=$NEW_BUILD
      [ "$pside" = old ] && pbuild=$OLD_BUILD
      for cfg in $(echo "${PROFILE_CONFIGS:-all-on:2:1:0,all-on:2:4:0}" | tr , ' '); do
        for cache in ${PROFILE_CACHE:-all}; do
          for seg in "${segs[@]}"; do
            f="$OUT/ncu-${cfg//:/-}"
            [ "$cache" = all ] || f="$f-cache-$cache"
            [ "$seg" = plain ] || f="$f-seg"
            [ "$pside" = new ] || f="$f-$pside"
            f="$f.txt"
            seg_args=()
            [ "$seg" = plain ] || read -r -a seg_args <<<"$SEG_ARGS"  # a word list, not globbed
            echo; echo "## ncu, $count kernels${PROFILE_KERNEL:+ matching $PROFILE_KERNEL} of $cfg${seg_args[*]:+ ${seg_args[*]}} after the first $skip, parameter set ${PROFILE_SET:-0}, $pside build, --cache-control $cache"
            # $count kernels after the first $skip launches (warm-up; of the kernels PROFILE_KERNEL matches, if set),
            # every batch parameter set PROFILE_SET (default 0): the same set's kernels whatever the number of kernels a
            # batch launches (before s23 the sets ran in turn, and a change that removed a kernel moved the profile to
            # another set).
            # --cache-control all (ncu's default) flushes the caches before each kernel: a chain pass then reads from DRAM
            # what in a batch its producer has just left in L2. PROFILE_CACHE="all none" profiles both ways.
            timeout 240 ncu --clock-control none --cache-control "$cache" ${kfilter[@]+"${kfilter[@]}"} \
              --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
              --section ComputeWorkloadAnalysis --section InstructionStats --launch-skip "$skip" --launch-count "$count" \
              "$pbuild"/augment/kernels/cuda/cuda_pipeline_bench --only "$cfg" --iters "${PROFILE_ITERS:-8}" \
              --profile-set "${PROFILE_SET:-0}" ${seg_args[@]+"${seg_args[@]}"} >"$f" 2>&1 \
              || echo "ncu exit $? (see $(basename "$f"))"
            grep -q "No kernels were profiled" "$f" && echo "ncu profiled no kernel: fewer launches than PROFILE_SKIP ($skip)?"
            awk 'function flush() { if (name != "") print name": "d", SM "sm"%, mem "mem"%, occupancy "occ"%, issue busy "iss"%, regs "regs", warp instructions "ins; name=d=sm=mem=occ=iss=regs=ins="" }
                 /^  [A-Za-z_].*\(/{flush(); name=$0; sub(/^ +/,"",name); sub(/\(.*/,"",name); sub(/.*::/,"",name)}
                 /Duration/{d=$NF" "$(NF-1)} /Compute \(SM\) Throughput/{sm=$NF}
                 /^ +Memory Throughput/{mem=$NF} /Achieved Occupancy/{occ=$NF}
                 /Issue Slots Busy/{iss=$NF} /Executed Instructions  /{ins=$NF} /Registers Per Thread/{regs=$NF}
                 END{flush()}' "$f"
          done
        done
      done
    done
  fi
} >"$OUT/summary.md" 2>&1
say "benchmarks done"
cat "$OUT/summary.md"
echo "== summary: ctest $CT_RC"
# The device returns at most 8 files: the logs and the JSON lines travel as one archive each.
(cd "$OUT" && tar czf logs.tar.gz ./*.log && rm -f ./*.log)
(cd "$OUT" && if compgen -G './*.jsonl' >/dev/null; then tar czf jsonl.tar.gz ./*.jsonl && rm -f ./*.jsonl; fi)
(cd "$OUT" && if compgen -G './clocks-*.csv' >/dev/null; then tar czf clocks.tar.gz ./clocks-*.csv && rm -f ./clocks-*.csv; fi)
