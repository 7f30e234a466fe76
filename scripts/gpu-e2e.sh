#!/bin/bash
# scripts/gpu-e2e.sh — end-to-end proof of issue 11 on the GPU machine, from the repository root:
#   real nnU-Net 3d_fullres training fed by nnU-Net's own loader vs nnUNetTrainerAugmentd vs compute only
#   (default and DA5 augmentation), then N concurrent trainings on one augmentd. Prints a markdown table last.
#
# Device call (needs `.whl` carried; ~9 min for every stage, so split it over two calls):
#   run(carry=[".whl"], command="E2E_STAGES=single scripts/gpu-e2e.sh")
#   run(carry=[".whl"], command="E2E_STAGES=da5,multi scripts/gpu-e2e.sh")
#   x2 machine: E2E_GPUS=2 E2E_STAGES=multi E2E_TENANTS=2,8 scripts/gpu-e2e.sh
#   issue 26, few cores per GPU (~6-7 min on a warm machine; the budgeted configuration, bench/e2e/README.md):
#   run(carry=[".device-kit", ".whl"], command="E2E_STAGES=cores E2E_CORES=2,4,16 E2E_CORES_COMPUTE=once
#       E2E_CASES=12 E2E_WARMUP=8 E2E_ITERS=60 E2E_RUN_SECONDS=8 E2E_BUDGET=540 scripts/gpu-e2e.sh")
#   issue 22, patch mode (nnUNetTrainerAugmentdPatch vs compute only, pinned to 16 and 4 cores; ~6-7 min):
#   run(carry=[".device-kit", ".whl"], command="E2E_STAGES=patch,patch_da5 E2E_PATCH_CORES=16,4 E2E_CASES=12
#       E2E_WARMUP=8 E2E_ITERS=60 E2E_RUN_SECONDS=8 E2E_BUDGET=540 scripts/gpu-e2e.sh")
#   issue 22 with repeats (2 x (compute only, patch trainer, switch50) at 16 cores, both augmentations; ~6-7 min):
#   run(carry=[".device-kit", ".whl"], command="E2E_STAGES=patch,patch_da5 E2E_PATCH_CORES=16 E2E_REPEATS=2
#       E2E_PATCH_VARIANTS=switch50 E2E_CASES=12 E2E_WARMUP=8 E2E_ITERS=60 E2E_RUN_SECONDS=8 E2E_BUDGET=560
#       scripts/gpu-e2e.sh")
#   issue 26, training quality (~5-7 min; 8 trainings at once on the GPU):
#   run(carry=[".device-kit", ".whl"], command="E2E_STAGES=quality E2E_BUDGET=540 scripts/gpu-e2e.sh")
# CPU dry run (here):  E2E_DEVICE=cpu E2E_TINY=1 AUGMENTD_BIN=build/server/augmentd scripts/gpu-e2e.sh
#
# Steps: kit environment (.device-kit/kit-env.sh) → nnU-Net 2.8.1 and friends from .whl/ into $E2E_SITE (plus a
# SimpleITK import stub where SimpleITK is missing) → the augmentd binary ($AUGMENTD_BIN, else
# $AUGMENTD_BUILD_DIR/server/augmentd, else configured and built into $AUGMENTD_BUILD_DIR=/tmp/build, target augmentd
# only) → synthetic dataset planned and preprocessed by nnU-Net (bench/e2e/make_dataset.py, cached in $E2E_WORK) →
# bench/e2e/run_e2e.py. Results in $OUT (or /tmp/gpu-e2e): table.md, results.jsonl, key-lines.txt, env.txt,
# logs.tar.gz.
#
#   issue 24, configurations 2d and 3d_cascade_fullres vs compute only (~4-5 min; figures e2e_2d_pct, e2e_cascade_pct):
#   run(carry=[".device-kit", ".whl"], command="E2E_STAGES=2d,cascade scripts/gpu-e2e.sh")
# Knobs (environment): E2E_STAGES=single,da5,multi (also 2d, cascade, cores, quality, patch, patch_da5)  E2E_DEVICE=cuda:0  E2E_GPUS=1  E2E_ITERS=150  E2E_WARMUP=20
#   E2E_RUN_SECONDS=25 (cap of one run's timed loop)  E2E_N_PROC_DA=12,16  E2E_DELIVERY=cuda_ipc,auto
#   E2E_TENANTS=4,8  E2E_MULTI_SECONDS=30  E2E_MULTI_BASELINE=1  E2E_PLACEMENTS=every[,one] (sessions on every
#   training's GPU / all on GPU 0; E2E_ONE_GPU_DELIVERY=cuda_ipc,host_shm,inline)  E2E_CASES=24  E2E_SHAPE=160  E2E_PATCH=
#   E2E_BUDGET=540 (seconds for the whole script; later runs are skipped)  E2E_WORK=/tmp/e2e  E2E_SITE=/tmp/site
#   E2E_PROFILE=N (torch.profiler tables of N extra iterations per single-process run, in key-lines.txt)
#   E2E_TINY=1 (dry-run sizes: 6 cases of 24³, 2+2 iterations, 2 loader processes, 2 tenants, cores 1,2)
#   Stage cores (issue 26): E2E_CORES=2,4,8,16 (each run pinned to N cores with taskset, nnUNet_n_proc_DA = N - 1)
#   E2E_CORES_AUG=default,da5  E2E_CORES_COMPUTE=each|once (compute only at every N / once per augmentation)
#   Stages patch, patch_da5 (issue 22): E2E_PATCH_CORES=4,16 (each run pinned to N cores with taskset,
#   nnUNet_n_proc_DA = N - 1 = AUGMENTD_PATCH_THREADS)  E2E_PATCH_COMPUTE=each|once (once: at the largest N)
#   E2E_PATCH_VARIANTS= (comma list; after each patch trainer run the same again as kind b-<variant>, a table column,
#   no figure: switch50 = sys.setswitchinterval(0.05) in the trainer (E2E_SWITCH_INTERVAL=0.05, read by
#   train_driver.py), threads2 = AUGMENTD_PATCH_THREADS=2, ahead1 = AUGMENTD_PATCH_AHEAD=1; unknown → refused at start)
#   E2E_REPEATS=1 (stages patch, patch_da5, 2d, cascade: N repeats run c, b, c, b, …; figures = median over repeats
#   of the per-run ms/iter medians, every run in runs_c / runs_b; a repeat that does not fit the time left is skipped
#   whole with the later ones, and the tables say how many were measured)
#   Stage paired (issues 22, 24; bench/e2e/paired.py): E2E_PAIRED_RUNS=patch,patch_da5,cascade (also default, da5, 2d:
#   one augmentd-trainer process each, compute-only and augmentd phases alternating) E2E_PAIRED_CORES=16 (taskset;
#   0: unpinned) E2E_PAIRED_PAIRS=6 E2E_PAIRED_ITERS=20 (timed per phase) E2E_PAIRED_SETTLE=5 (untimed per phase)
#   Stage quality (issue 26, bench/e2e/run_quality.py): E2E_Q_EPOCHS=20 E2E_Q_ITERS=50 E2E_Q_VAL_ITERS=10
#   E2E_Q_SEEDS=1,2 E2E_Q_TRAINERS=nnUNetTrainer,nnUNetTrainerAugmentd,nnUNetTrainerDA5,nnUNetTrainerAugmentdDA5
#   E2E_Q_PARALLEL=8 (trainings at once on the GPU) E2E_Q_N_PROC_DA=2 E2E_Q_CASES=24 E2E_Q_TEST_CASES=8
#   E2E_Q_PATCH=32,64,64 E2E_Q_BATCH=2 E2E_Q_TTA=1 E2E_Q_DATASET_ARGS= (quality_dataset.py difficulty flags)
#   E2E_Q_WORK=$E2E_WORK-quality
#   E2E_MPS=1: every run (compute only and augmentd alike) under one CUDA MPS daemon started here and stopped at the
#   end (nvidia-cuda-mps-control -d; pipes in /tmp/e2e-mps): the trainer's and the server's kernels share the GPU
#   through MPS instead of time-slicing two contexts. The figures'
#   machine says ", MPS".
set -uo pipefail
START=$(date +%s)
# the command as called (its E2E_* / AUGMENTD_* settings), for the tables' headers
export E2E_COMMAND="${E2E_COMMAND:-$(env | grep -E '^(E2E|AUGMENTD)_[A-Z0-9_]*=' | sort | tr '\n' ' ')scripts/gpu-e2e.sh}"
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/gpu-e2e}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 nnUNet_compile=${nnUNet_compile:-False}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
E2E_DEVICE=${E2E_DEVICE:-cuda:0}
E2E_WORK=${E2E_WORK:-/tmp/e2e}
E2E_SITE=${E2E_SITE:-/tmp/site}
E2E_BUDGET=${E2E_BUDGET:-540}
if [ "${E2E_TINY:-0}" = 1 ]; then
  : "${E2E_CASES:=6}" "${E2E_SHAPE:=24}" "${E2E_ITERS:=2}" "${E2E_WARMUP:=2}" "${E2E_N_PROC_DA:=2}"
  : "${E2E_TENANTS:=2}" "${E2E_MULTI_SECONDS:=8}" "${E2E_RUN_SECONDS:=20}" "${E2E_CPU_THREADS:=1}"
  : "${E2E_MIN_RUN_SECONDS:=15}" "${E2E_CORES:=1,2}" "${E2E_PATCH_CORES:=1,2}"
  export E2E_ITERS E2E_WARMUP E2E_N_PROC_DA E2E_TENANTS E2E_MULTI_SECONDS E2E_RUN_SECONDS E2E_CPU_THREADS \
    E2E_MIN_RUN_SECONDS E2E_CORES E2E_PATCH_CORES
  # stage quality: 6 + 2 cases of 12x32x32, a narrow network, 1 epoch x 2 iterations, one seed
  : "${E2E_Q_CASES:=6}" "${E2E_Q_TEST_CASES:=2}" "${E2E_Q_PATCH:=8,32,32}" "${E2E_Q_SHRINK:=1}" \
    "${E2E_Q_DATASET_ARGS:=--shape 12,32,32}" "${E2E_Q_EPOCHS:=1}" "${E2E_Q_ITERS:=2}" "${E2E_Q_VAL_ITERS:=1}" \
    "${E2E_Q_SEEDS:=1}" "${E2E_Q_TTA:=0}" "${E2E_Q_N_PROC_DA:=1}" "${E2E_Q_EXPORT_PROCESSES:=1}"
  export E2E_Q_CASES E2E_Q_TEST_CASES E2E_Q_PATCH E2E_Q_SHRINK E2E_Q_DATASET_ARGS E2E_Q_EPOCHS E2E_Q_ITERS \
    E2E_Q_VAL_ITERS E2E_Q_SEEDS E2E_Q_TTA E2E_Q_N_PROC_DA E2E_Q_EXPORT_PROCESSES
fi
E2E_CASES=${E2E_CASES:-24}
E2E_SHAPE=${E2E_SHAPE:-160}
NPROC=$(nproc)
elapsed() { echo $(( $(date +%s) - START )); }
say() { echo "[gpu-e2e $(elapsed)s] $*"; }

# 1. Kit environment (gRPC/protobuf debs for a build, blosc2 wheel) — on the GPU machine only.
if [ -z "${AUGMENTD_KIT_CMAKE_ARGS:-}" ] && [ -f .device-kit/kit-env.sh ] && [ "${E2E_DEVICE%%:*}" = cuda ]; then
  source .device-kit/kit-env.sh
fi

# 2. nnU-Net and its dependencies from the carried wheels (cp312); import stub for SimpleITK if it is missing.
if ls .whl/*.whl >/dev/null 2>&1 && [ "${E2E_INSTALL_WHEELS:-1}" = 1 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$E2E_SITE" \
    .whl/*.whl || { echo "wheel install failed"; exit 1; }
  export PYTHONPATH="$E2E_SITE:${PYTHONPATH:-}"
fi
if ! python3 -c "import SimpleITK" >/dev/null 2>&1; then
  export PYTHONPATH="$PWD/bench/e2e/stubs:${PYTHONPATH:-}"
  say "SimpleITK missing: using the import stub bench/e2e/stubs/SimpleITK (images go through NibabelIO)"
fi
export PYTHONPATH="$PWD/client/python/src:${PYTHONPATH:-}"
python3 - >"$OUT/env.txt" 2>&1 <<'PY'
import importlib, importlib.metadata, sys
print("python", sys.version.split()[0])
for m in ("torch", "numpy", "nnunetv2", "batchgeneratorsv2", "blosc2", "grpc", "google.protobuf", "nibabel",
          "SimpleITK"):
    mod = importlib.import_module(m)
    version = "stub" if getattr(mod, "STUB", False) else getattr(mod, "__version__", None)
    if version is None:
        try:
            version = importlib.metadata.version(m)
        except importlib.metadata.PackageNotFoundError:
            version = "?"
    print(m, version, getattr(mod, "__file__", "") or list(getattr(mod, "__path__", [])))
import torch
print("cuda", torch.cuda.is_available(), torch.cuda.device_count(), torch.version.cuda)
import nnunetv2.run.run_training  # noqa: F401
import augmentd.nnunet.trainer  # noqa: F401  (generates the gRPC stubs on first import)
print("imports ok")
PY
RC=$?
cat "$OUT/env.txt"
[ $RC = 0 ] || { echo "python environment broken (see above)"; exit 1; }
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used \
  --format=csv | tee -a "$OUT/env.txt"

# 3. The augmentd binary.
if [ -z "${AUGMENTD_BIN:-}" ]; then
  BUILD=${AUGMENTD_BUILD_DIR:-/tmp/build}
  if [ ! -x "$BUILD/server/augmentd" ] || [ "${E2E_REBUILD:-0}" = 1 ]; then
    say "building augmentd in $BUILD"
    ZLIB_ARGS=()
    [ -e /usr/lib/x86_64-linux-gnu/libz.so.1 ] && ZLIB_ARGS=(-DZLIB_LIBRARY=/usr/lib/x86_64-linux-gnu/libz.so.1)
    if [ ! -f "$BUILD/build.ninja" ]; then
      # shellcheck disable=SC2086  # AUGMENTD_KIT_CMAKE_ARGS is a list of -D arguments
      cmake -S . -B "$BUILD" ${AUGMENTD_KIT_CMAKE_ARGS:-} -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DAUGMENTD_PYTHON="$(command -v python3)" "${ZLIB_ARGS[@]}" >"$E2E_WORK.build.log" 2>&1 \
        || { tail -30 "$E2E_WORK.build.log"; exit 1; }
    fi
    ninja -C "$BUILD" -j"$NPROC" augmentd >>"$E2E_WORK.build.log" 2>&1 \
      || { grep -E "^FAILED|error:" "$E2E_WORK.build.log" | head -20; exit 1; }
  fi
  AUGMENTD_BIN="$BUILD/server/augmentd"
fi
export AUGMENTD_BIN
"$AUGMENTD_BIN" --version | tee -a "$OUT/env.txt" || { echo "augmentd binary does not run: $AUGMENTD_BIN"; exit 1; }
echo "server configuration: AUGMENTD_LOCAL_CACHES=${AUGMENTD_LOCAL_CACHES:-auto} AUGMENTD_SERVER_ARGS=${AUGMENTD_SERVER_ARGS:-} (trainer-started servers); E2E_SERVER_ARGS=${E2E_SERVER_ARGS:-} (the multi stage's shared server)" \
  | tee -a "$OUT/env.txt"
say "augmentd: $AUGMENTD_BIN"

# Stage quality (issue 26) has a dataset of its own (step 6); steps 4-5 are for the other stages (not re-indented).
E2E_STAGES=${E2E_STAGES:-single,da5,multi}
E2E_OTHER_STAGES=$(tr ',' '\n' <<<"$E2E_STAGES" | grep -vx quality | paste -sd,)
if [ -n "$E2E_OTHER_STAGES" ]; then
# 4. Synthetic dataset, planned and preprocessed by nnU-Net (cached in $E2E_WORK).
PATCH_ARGS=()
[ -n "${E2E_PATCH:-}" ] && PATCH_ARGS=(--patch "$E2E_PATCH")
# issue 24's stages: 2d needs the 2d preprocessing, cascade the 3d_lowres → 3d_cascade_fullres plans and predictions
# (stage paired: as its E2E_PAIRED_RUNS name them)
PAIRED=""; case ",${E2E_STAGES:-}," in *,paired,*) PAIRED=",${E2E_PAIRED_RUNS:-patch,patch_da5,cascade}," ;; esac
case ",${E2E_STAGES:-single,da5,multi},$PAIRED" in *,2d,*) PATCH_ARGS+=(--configurations 3d_fullres,2d) ;; esac
case ",${E2E_STAGES:-single,da5,multi},$PAIRED" in *,cascade,*) PATCH_ARGS+=(--cascade) ;; esac
say "dataset: $E2E_CASES cases of ~${E2E_SHAPE}^3 in $E2E_WORK"
mkdir -p "$E2E_WORK"
timeout "${E2E_PREP_TIMEOUT:-300}" python3 bench/e2e/make_dataset.py --work "$E2E_WORK" --cases "$E2E_CASES" \
  --shape "$E2E_SHAPE" --np "${E2E_PREP_PROCESSES:-$NPROC}" "${PATCH_ARGS[@]}" >"$E2E_WORK.prep.log" 2>&1
RC=$?
tail -1 "$E2E_WORK.prep.log" | tee "$OUT/dataset.json"
[ $RC = 0 ] || { echo "dataset preparation failed (exit $RC):"; tail -30 "$E2E_WORK.prep.log"; exit 1; }
fi

# 5. The runs.
say "stages ${E2E_STAGES:-single,da5,multi} on $E2E_DEVICE (${E2E_GPUS:-1} GPU(s))"
rm -rf "$OUT/logs" "$OUT/results.jsonl" "$OUT/key-lines.txt" "$OUT"/figures-*.jsonl "$OUT"/quality-*
if [ -z "${E2E_MACHINE:-}" ]; then
  if command -v nvidia-smi >/dev/null; then
    E2E_MACHINE="$(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | sed 's/^ *//' | paste -sd,)"
  else
    E2E_MACHINE="$(hostname) (no GPU)"
  fi
  E2E_MACHINE="$E2E_MACHINE, $NPROC cores"
fi
if [ "${E2E_MPS:-0}" = 1 ]; then
  command -v nvidia-cuda-mps-control >/dev/null || { say "E2E_MPS=1 but no nvidia-cuda-mps-control"; exit 1; }
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/e2e-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/e2e-mps/log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d || { say "the MPS daemon did not start"; exit 1; }
  trap 'echo quit | nvidia-cuda-mps-control' EXIT
  E2E_MACHINE="$E2E_MACHINE, MPS"
  say "MPS daemon started ($CUDA_MPS_PIPE_DIRECTORY)"
fi
RC=0
if [ -n "$E2E_OTHER_STAGES" ]; then
E2E_STAGES=$E2E_OTHER_STAGES E2E_DEADLINE=$(( E2E_BUDGET - $(elapsed) - 15 )) E2E_DEVICE=$E2E_DEVICE \
  E2E_MACHINE=$E2E_MACHINE python3 bench/e2e/run_e2e.py --work "$E2E_WORK" --out "$OUT" --quiet
RC=$?
fi

# 6. Stage quality (issue 26): nnUNetv2_train with nnU-Net's loaders and augmentd's, final validation, nnUNetv2_predict
#    on a shifted test set, Dice (bench/e2e/run_quality.py; its dataset in ${E2E_Q_WORK:-$E2E_WORK-quality}).
if tr ',' '\n' <<<"$E2E_STAGES" | grep -qx quality; then
  mkdir -p "$OUT/logs"
  say "stage quality: ${E2E_Q_EPOCHS:-20} epochs x ${E2E_Q_ITERS:-50} iterations, seeds ${E2E_Q_SEEDS:-1,2}"
  E2E_Q_DEADLINE=$(( E2E_BUDGET - $(elapsed) - 15 )) E2E_MACHINE=$E2E_MACHINE E2E_Q_DEVICE=${E2E_DEVICE%%:*} \
    python3 bench/e2e/run_quality.py --work "${E2E_Q_WORK:-$E2E_WORK-quality}" --out "$OUT" --quiet
  QRC=$?
  [ $RC = 0 ] && RC=$QRC
fi
cp "$E2E_WORK.prep.log" "$OUT/logs/" 2>/dev/null
[ -f "$E2E_WORK.build.log" ] && cp "$E2E_WORK.build.log" "$OUT/logs/"
tar -C "$OUT" -czf "$OUT/logs.tar.gz" logs && rm -rf "$OUT/logs"
say "done (exit $RC); files in $OUT: $(ls "$OUT" | paste -sd' ')"
echo; cat "$OUT/table.md" 2>/dev/null
[ -f "$OUT/quality-table.md" ] && { echo; cat "$OUT/quality-table.md"; }
cat "$OUT"/figures-*.jsonl 2>/dev/null
exit $RC
