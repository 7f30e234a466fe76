#!/bin/sh
# bench/cuda_pipeline_bench_args_test.sh BENCH — cuda_pipeline_bench refuses a --modes / --only selection that would
# run nothing (exit 2 naming the entry, before the device is touched: the same verdict with or without a GPU), and
# accepts a valid one (exit 0: no device prints "no CUDA device", a GPU times one row once).
# Registered as ctest cuda_pipeline_bench_args (augment/kernels/cuda/CMakeLists.txt).
bench=${1:?usage: cuda_pipeline_bench_args_test.sh PATH_TO_cuda_pipeline_bench}
fails=0
refused() {  # EXPECTED_MESSAGE ARGS...: exit 2 with EXPECTED_MESSAGE on stderr
  want=$1
  shift
  err=$("$bench" "$@" 2>&1 >/dev/null)
  rc=$?
  case $rc:$err in
    2:*"$want"*) echo "ok: $* -> exit 2 ($want)" ;;
    *) echo "FAIL: $* -> exit $rc, wanted 2 with '$want'; stderr: $err"; fails=$((fails + 1)) ;;
  esac
}
refused "unknown mode 'nope'" --only nope:2:1:0
refused "unknown mode 'all-onn'" --modes all-on,all-onn
refused "which --modes leaves out" --modes all-on,default-p --only all-on:2:1:0,only-blur:2:1:0
refused "is not MODE:B:C:SHAPE" --only all-on:2:1
refused "is not MODE:B:C:SHAPE" --only all-on:2:1:0x
refused "B is 2 or 8" --only all-on:4:1:0
refused "B is 2 or 8" --only all-on:2:1:2
refused "C=4 is not among --channels" --channels 1 --only all-on:2:4:0
refused "is not a row of the bench" --only only-blur:2:4:0
refused "is not a row of the bench" --only crops:8:1:0
out=$("$bench" --modes all-on --only all-on:2:1:0 --iters 1 2>&1)
rc=$?
if [ $rc -eq 0 ]; then
  echo "ok: a valid selection runs (exit 0)"
else
  echo "FAIL: --modes all-on --only all-on:2:1:0 --iters 1 -> exit $rc: $out"
  fails=$((fails + 1))
fi
[ $fails -eq 0 ] && echo "cuda_pipeline_bench_args: all passed" || echo "cuda_pipeline_bench_args: $fails failed"
[ $fails -eq 0 ]
