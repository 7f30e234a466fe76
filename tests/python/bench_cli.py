"""The benchmarks' command-line tests' helper: run one of the build's benchmark binaries, or skip the test where that
binary was not built (a CPU-only build has no CUDA benchmarks)."""
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("AUGMENTD_BUILD_DIR", REPO / "build"))


def bench_runner(relative_path):
    """A function that runs BUILD/relative_path with its arguments and returns the CompletedProcess (text output)."""
    binary = BUILD / relative_path

    def run(*args):
        if not binary.is_file():
            pytest.skip(f"{binary.name} not built: {binary}")
        return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=60)

    return run
