"""The ``augmentd`` server executable shipped inside the binary wheel (``scripts/build-wheel.sh``).

    augmentd --listen=unix:///tmp/aug.sock --device=auto     # the console script: runs the packaged server
    python -m augmentd.packaged --help                        # the same without the console script

The binary wheel holds the executable at ``augmentd/_bin/augmentd`` with the libraries it needs beyond the
manylinux base (gRPC, protobuf, abseil, OpenSSL, c-blosc2, ...) grafted into ``augmentd.libs/`` by auditwheel,
and two RUNPATH entries: ``$ORIGIN/../../augmentd.libs`` and ``$ORIGIN/../../nvidia/cu13/lib`` (the CUDA runtime
and cuFFT of the ``nvidia-cuda-runtime`` / ``nvidia-cufft`` wheels, dependencies of the binary wheel, installed
beside it). When those wheels live in another ``sys.path`` entry than this package (``pip install --target``,
a user site over a system torch), ``environ()`` adds their ``lib`` folder to ``LD_LIBRARY_PATH``;
``augmentd.local_server`` starts the packaged server with that environment. A source checkout has no
``_bin/``: ``binary()`` is then None and the server comes from ``$AUGMENTD_BIN`` or the build tree.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Dict, List, Mapping, Optional

BINARY = Path(__file__).resolve().parent / "_bin" / "augmentd"
# The CUDA 13 wheels (nvidia-cuda-runtime 13.x, nvidia-cufft 12.x) install their libraries here, relative to the
# site-packages folder that holds them.
CUDA_LIB_SUBDIR = Path("nvidia") / "cu13" / "lib"


def binary() -> Optional[str]:
    """The packaged server executable, or None when this package came without one (a source checkout)."""
    return str(BINARY) if BINARY.is_file() and os.access(BINARY, os.X_OK) else None


def cuda_library_dirs(path: Optional[List[str]] = None) -> List[str]:
    """Every ``nvidia/cu13/lib`` folder on ``path`` (default ``sys.path``) that holds the CUDA runtime."""
    found: List[str] = []
    for entry in path if path is not None else sys.path:
        d = Path(entry or ".") / CUDA_LIB_SUBDIR
        if (d / "libcudart.so.13").exists() and str(d.resolve()) not in found:
            found.append(str(d.resolve()))
    return found


def environ(base: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """``base`` (default ``os.environ``) with the CUDA wheel folders of ``sys.path`` appended to LD_LIBRARY_PATH.

    Appended, so a user's LD_LIBRARY_PATH still wins; the executable's own RUNPATH comes after both."""
    env = dict(os.environ if base is None else base)
    dirs = [d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d]
    extra = [d for d in cuda_library_dirs() if d not in dirs]
    if extra:
        env["LD_LIBRARY_PATH"] = ":".join(dirs + extra)
    return env


def main(argv: Optional[List[str]] = None) -> int:
    """The ``augmentd`` console script: replaces this process with the packaged server."""
    args = sys.argv[1:] if argv is None else argv
    path = binary()
    if path is None:
        print(f"augmentd: this installation has no packaged server ({BINARY} is missing): install the binary "
              "wheel (scripts/build-wheel.sh), or run a built server (build/server/augmentd)", file=sys.stderr)
        return 127
    os.execve(path, [path, *args], environ())
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
