"""pytest configuration shared by augmentd's Python suites (tests/python).

Owner: parity tests (issue 3). Other suites rely on it too: keep the ``capi`` fixture and the path setup.

* Puts ``tests/python`` (``augment_capi``, ``augmentd_server``), ``tests/python/parity`` (``bgv2_ref``) and
  ``tests/python/dataset`` on ``sys.path``.
* Pins MKL's numerics before anything imports torch (``MKL_CBWR``, first statements below), and offers
  ``AUGMENTD_TEST_REFERENCE_MATMUL=fp64`` to emulate another CPU's BLAS in the references
  (``scripts/test-cpu-variants.sh`` runs the suites under both and under other CPU code paths).
* Limits torch to one thread (``AUGMENTD_TEST_TORCH_THREADS`` overrides): the CI machines are small and shared,
  and bgv2 runs single-threaded inside nnU-Net's data-augmentation workers anyway (``threadpool_limits(1)``).
* ``capi`` fixture (session): the ``augment_capi`` module with the engine's C ABI library loaded. The test is
  skipped, naming the path that was searched, only when the library file does not exist
  (``augment_capi.library_available()``); a library that exists but fails to load is an error, not a skip.
"""

from __future__ import annotations

import os

# --- Reference numerics (issue 19). Must run before torch (and so MKL) is first imported: MKL reads its
# environment once, when it initialises. The references (bgv2, nnU-Net, torch) run torch's CPU kernels; torch's
# matmul goes through MKL, which picks its kernels -- and so the rounding, e.g. FMA or not -- by CPU. bgv2's
# SpatialTransform builds its sampling grid with such a matmul, so the reference grid (and every voxel sampled
# from it) used to move with the CPU. MKL's conditional numerical reproducibility pins the code path: with
# MKL_CBWR=COMPATIBLE MKL gives the same bits on every x86-64 CPU (for a fixed thread count; torch runs one thread
# here, see below). setdefault: scripts/test-cpu-variants.sh overrides it (AUGMENTD_TEST_MKL_CBWR=off leaves MKL
# unpinned, so that the tolerance-based assertions are exercised on each MKL code path). The tests do not rely on
# the pin for their verdict: where a reference depends on the CPU (BLAS, torch's vectorised kernels, numpy's SIMD
# dispatch, thread counts) they assert the documented tolerance, not bit equality.
if os.environ.get("AUGMENTD_TEST_MKL_CBWR", "").lower() == "off":
    os.environ.pop("MKL_CBWR", None)
else:
    os.environ.setdefault("MKL_CBWR", "COMPATIBLE")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import sys  # noqa: E402
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
for _p in (_HERE, _HERE / "parity", _HERE / "dataset"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import augment_capi  # noqa: E402

try:
    import torch

    # AUGMENTD_TEST_TORCH_THREADS: scripts/test-cpu-variants.sh runs the references on 2 threads too (reductions
    # may split by thread count); the verdict must not change.
    torch.set_num_threads(int(os.environ.get("AUGMENTD_TEST_TORCH_THREADS", "1")))
except ImportError:  # pragma: no cover - torch is in requirements.txt
    torch = None


def _emulate_other_blas() -> None:
    """AUGMENTD_TEST_REFERENCE_MATMUL=fp64: every float32 ``torch.matmul`` in the references accumulates in
    float64 and rounds once, close to what an FMA-chained (AVX2/AVX-512) BLAS kernel gives on other CPUs, while
    this machine's MKL may round after every product. The suite must give the same verdict either way; this lets
    one machine reproduce another CPU's reference grids (bgv2's SpatialTransform) without that CPU."""
    mode = os.environ.get("AUGMENTD_TEST_REFERENCE_MATMUL", "")
    if not mode or torch is None:
        return
    if mode != "fp64":
        raise pytest.UsageError(f"AUGMENTD_TEST_REFERENCE_MATMUL={mode!r}: the only mode is 'fp64'")
    matmul = torch.matmul

    def matmul_fp64(a, b, *args, **kwargs):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype == torch.float32:
            return matmul(a.double(), b.double(), *args, **kwargs).float()
        return matmul(a, b, *args, **kwargs)

    torch.matmul = matmul_fp64


_emulate_other_blas()


@pytest.fixture(scope="session")
def capi():
    """The ``augment_capi`` module with its library loaded; skips when the library file is absent."""
    if not augment_capi.library_available():
        pytest.skip(f"augmentd C ABI library not built: {augment_capi.library_path()} does not exist "
                    f"(build target augment_capi, or set AUGMENTD_CAPI_LIB / AUGMENTD_BUILD_DIR)")
    augment_capi.load_library()
    return augment_capi
