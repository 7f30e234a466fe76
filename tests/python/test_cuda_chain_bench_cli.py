"""bench/cuda_chain_bench's command line: every number option takes only a whole number in its range (bench_args.h),
and a bad one exits 1 naming the flag before any device is looked for, so these run on any machine that built the
benchmark (CI builds it with the CUDA kernels).

Before session 42 the numbers went through atoi: `--workers 3x` ran three workers and `--iters abc` one iteration,
each under the label the caller asked for.
"""
import pytest

from bench_cli import bench_runner

run = bench_runner("bench/cuda_chain_bench")


def test_help_exits_0_with_the_usage():
    proc = run("--help")
    assert proc.returncode == 0, proc.stderr
    assert "usage:" in proc.stderr and "--workers" in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--policies", "--workers", "3x"], "--workers: an integer in 1..64, got 3x"),
    (["--policies", "--workers", "0"], "--workers: an integer in 1..64, got 0"),
    (["--policies", "--workers", "65"], "--workers: an integer in 1..64, got 65"),
    (["--iters", "abc"], "--iters: an integer in 1..1000000, got abc"),
    (["--iters", "0"], "--iters: an integer in 1..1000000, got 0"),
    (["--batch", "2.5"], "--batch: an integer in 1..4096, got 2.5"),
    (["--iters", " 5"], "--iters: an integer in 1..1000000, got  5"),
    (["--channels", "-1"], "--channels: an integer in 1..8, got -1"),
    (["--channels", "9"], "--channels: an integer in 1..8, got 9"),
    (["--patch", "64,64"], "--patch: three sizes (Z,Y,X), got 64,64"),
    (["--patch", "32, 32, 32"], "--patch: a list of integers in 1..4096 separated by commas, got 32, 32, 32"),
    (["--patch", "128,,96"], "--patch: a list of integers in 1..4096 separated by commas, got 128,,96"),
    (["--patch", "128,96,"], "--patch: a list of integers in 1..4096 separated by commas, got 128,96,"),
    (["--patch", "0,128,128"], "--patch: a list of integers in 1..4096 separated by commas, got 0,128,128"),
    (["--workers", "2"], "--workers goes with --policies"),
    (["--bogus"], "usage:"),
])
def test_bad_arguments_exit_1_and_say_which(args, message):
    proc = run(*args)
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert message in proc.stderr
