"""pytest configuration for the transforms' own Python tests (``augment/transforms/<name>/*_test.py``: parity with
the reference implementation, kept in the kind's folder). They share tests/python's setup and fixtures: this loads
``tests/python/conftest.py`` (path setup, reference numerics, the ``capi`` fixture) under its own module name.

Run: ``AUGMENTD_BUILD_DIR=$PWD/build .venv/bin/python -m pytest augment/transforms -q -p no:cacheprovider``
(scripts/test.sh runs it with tests/python).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

_SHARED = Path(__file__).resolve().parents[2] / "tests" / "python" / "conftest.py"
_spec = importlib.util.spec_from_file_location("augmentd_tests_python_conftest", _SHARED)
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)

capi = _shared.capi  # the session fixture: augment_capi with the engine's C ABI library loaded
