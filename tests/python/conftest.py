"""pytest configuration shared by augmentd's Python suites (tests/python).

Owner: parity tests (issue 3). Other suites rely on it too: keep the ``capi`` fixture and the path setup.

* Puts ``tests/python`` (``augment_capi``, ``augmentd_server``), ``tests/python/parity`` (``bgv2_ref``) and
  ``tests/python/dataset`` on ``sys.path``.
* Limits torch to one thread: the CI machines are small and shared, and bgv2 runs single-threaded inside
  nnU-Net's data-augmentation workers anyway (``threadpool_limits(1)``).
* ``capi`` fixture (session): the ``augment_capi`` module with the engine's C ABI library loaded. The test is
  skipped, naming the path that was searched, only when the library file does not exist
  (``augment_capi.library_available()``); a library that exists but fails to load is an error, not a skip.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
for _p in (_HERE, _HERE / "parity", _HERE / "dataset"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import augment_capi  # noqa: E402

os.environ.setdefault("OMP_NUM_THREADS", "1")
try:
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover - torch is in requirements.txt
    pass


@pytest.fixture(scope="session")
def capi():
    """The ``augment_capi`` module with its library loaded; skips when the library file is absent."""
    if not augment_capi.library_available():
        pytest.skip(f"augmentd C ABI library not built: {augment_capi.library_path()} does not exist "
                    f"(build target augment_capi, or set AUGMENTD_CAPI_LIB / AUGMENTD_BUILD_DIR)")
    augment_capi.load_library()
    return augment_capi
