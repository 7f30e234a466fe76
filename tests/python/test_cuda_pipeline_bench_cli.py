"""bench/cuda_pipeline_bench's command line: --help, and a clear exit 2 for every bad argument (no GPU needed: they
exit before the device is looked for); with a GPU the good-arguments case times its three rows (a few seconds).

Before session 27 the benchmark ignored what it did not know, so a flag an older build lacked (--seg-block, say) ran
the default configuration under the caller's label. Arguments are parsed before the device is looked for, so these
run on any machine that built the benchmark (CI builds it with the CUDA kernels).
"""
import pytest

from bench_cli import bench_runner

run = bench_runner("augment/kernels/cuda/cuda_pipeline_bench")


def test_help_lists_every_option():
    proc = run("--help")
    assert proc.returncode == 0, proc.stderr
    for flag in ("--json", "--iters", "--modes", "--only", "--bgv2", "--channels", "--profile-set", "--seg-block",
                 "--seg-labels", "--digests", "--block-clocks"):
        assert flag in proc.stdout


@pytest.mark.parametrize("args, message", [
    (["--bogus", "1"], "unknown option --bogus"),
    (["stray"], "unexpected argument stray"),
    (["--iters"], "no value after --iters"),
    (["--iters", "x"], "--iters: an integer in 1..1000000, got x"),
    (["--iters", "0"], "--iters: an integer in 1..1000000, got 0"),
    (["--seg-block", "0"], "--seg-block: an integer in 1..1024, got 0"),
    (["--seg-labels", "32768"], "--seg-labels: an integer in 1..32767, got 32768"),
    (["--seg-labels", "4x"], "--seg-labels: an integer in 1..32767, got 4x"),
    (["--profile-set", "16"], "--profile-set: an integer in 0..15, got 16"),
    (["--digests", "2"], "--digests: an integer in 0..1, got 2"),
    (["--bgv2", "0.3.7"], "--bgv2: 0.3.5 or 0.3.6, got 0.3.7"),
    (["--channels", "1,0"], "--channels: a list of integers in 1.."),
    (["--channels", "1,,4"], "--channels: a list of integers in 1.."),
    (["--iters", "3x"], "--iters: an integer in 1..1000000, got 3x"),
    (["--seg-block", "32", "--json"], "no value after --json"),
    # A --modes / --only entry that would run nothing (session 33; session 32's `only-blur` row was dropped without a
    # word because --modes left its mode out).
    (["--only", "nope:2:1:0"], "--only: unknown mode 'nope' in 'nope:2:1:0'"),
    (["--only", "none:0:0:0"], "--only: unknown mode 'none'"),
    (["--modes", "all-on,all-onn"], "--modes: unknown mode 'all-onn'"),
    (["--modes", "all-on,default-p", "--only", "all-on:2:1:0,only-blur:2:1:0"],
     "--only: 'only-blur:2:1:0' names mode only-blur, which --modes leaves out"),
    (["--only", "all-on:2:1"], "--only: 'all-on:2:1' is not MODE:B:C:SHAPE or spatial-bw"),
    (["--only", "all-on:2:1:0x"], "--only: 'all-on:2:1:0x' is not MODE:B:C:SHAPE or spatial-bw"),
    (["--only", "all-on:4:1:0"], "--only: 'all-on:4:1:0': B is 2 or 8"),
    (["--only", "all-on:2:1:2"], "--only: 'all-on:2:1:2': B is 2 or 8 and SHAPE 0"),
    (["--channels", "1", "--only", "all-on:2:4:0"], "--only: 'all-on:2:4:0': C=4 is not among --channels"),
    (["--only", "only-blur:2:4:0"], "--only: 'only-blur:2:4:0' is not a row of the bench"),
    (["--only", "crops:8:1:0"], "--only: 'crops:8:1:0' is not a row of the bench"),
    # Numbers the main loop's text match would not find (it looks for ",all-on:2:1:0,"), empty lists, and a mode with no
    # row for the channels given.
    (["--only", "all-on:02:1:0"], "--only: 'all-on:02:1:0' is not written as the bench names its rows"),
    (["--only", "all-on: 2:1:0"], "--only: 'all-on: 2:1:0' is not written as the bench names its rows"),
    (["--only", "all-on:+2:1:0"], "--only: 'all-on:+2:1:0' is not written as the bench names its rows"),
    (["--only", "all-on:2:1:-0"], "--only: 'all-on:2:1:-0' is not written as the bench names its rows"),
    (["--only", "spatial-bw:2:1:0"], "--only: spatial-bw takes no B:C:SHAPE"),
    (["--only", ","], "--only: an empty list"),
    (["--only", ""], "--only: an empty list"),
    (["--modes", ""], "--modes: an empty list"),
    (["--modes", "only-blur", "--channels", "4"], "--modes: mode only-blur has no row with these --channels"),
    # The block timeline is a bench build's (-DAUGMENTD_BLOCK_CLOCKS=1, NOTES.md s47); the tests' build records none.
    (["--block-clocks", "clocks.csv"], "--block-clocks needs a build with -DAUGMENTD_BLOCK_CLOCKS=1"),
])
def test_bad_arguments_exit_2_and_say_which(args, message):
    proc = run(*args)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert message in proc.stderr


def test_good_arguments_are_accepted():
    # Every option, and a selection of rows that exist (among them one the default --channels 1,4 lacks): with a GPU
    # the run times them, a few batches each; without one it says so. Either way the arguments parsed (exit 0).
    proc = run("--seg-block", "32", "--seg-labels", "3", "--iters", "5", "--bgv2", "0.3.6", "--channels", "1,2",
               "--profile-set", "0", "--digests", "1", "--modes", "all-on,only-noise",
               "--only", "all-on:2:2:0,only-noise:2:1:1,spatial-bw")
    assert proc.returncode == 0, proc.stderr
