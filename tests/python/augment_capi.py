"""ctypes wrapper around augmentd's engine C ABI (``augment/capi.h``, ``libaugment_capi.so``).

The C ABI takes one JSON request and returns an opaque result holding a status, a JSON document and a list of
named tensors. Input tensors travel *by address* inside the JSON (``{"data": <address>, "dtype": "float32",
"shape": [...]}``); this module builds those references from numpy arrays, keeps the arrays alive for the
duration of the call, and copies every output tensor into a fresh numpy array before the result is freed.

Usage::

    import numpy as np
    import augment_capi

    img = np.random.rand(1, 32, 32, 32).astype(np.float32)
    params, tensors = augment_capi.run(
        {"op": "apply_transform",
         "transform": {"kind": "gamma", "config": {...}},
         "params": {...}},
        image=img)
    out = tensors["image"]

Where the library is found (first that applies):

1. ``$AUGMENTD_CAPI_LIB``: the path of the ``.so`` itself;
2. ``$AUGMENTD_BUILD_DIR/augment/libaugment_capi.so`` (a relative build dir is taken relative to the repository
   root);
3. ``build/augment/libaugment_capi.so`` under the repository root.

Thread-safety: ``run`` may be called from several threads; the library is loaded once (guarded by a lock).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

__all__ = [
    "AugmentdError",
    "REPO_ROOT",
    "AUGLAB_DIR",
    "require_auglab",
    "listed_kinds",
    "library_path",
    "library_available",
    "load_library",
    "tensor_ref",
    "run",
]

#: Repository root (this file lives in ``<root>/tests/python``).
REPO_ROOT: Path = Path(__file__).resolve().parents[2]

#: The auglab package, a test reference only (GPL-3.0; scripts/setup.sh installs it ``--no-deps`` here).
AUGLAB_DIR: Path = Path(os.environ.get("AUGMENTD_AUGLAB_DIR", REPO_ROOT / ".venv" / "auglab"))


def require_auglab() -> None:
    """Puts AUGLAB_DIR on ``sys.path`` for ``import auglab…``, or skips the calling test when auglab is not there."""
    import pytest

    if not (AUGLAB_DIR / "auglab").is_dir():
        pytest.skip(f"auglab not installed at {AUGLAB_DIR} (scripts/setup.sh installs it; or set AUGMENTD_AUGLAB_DIR)")
    if str(AUGLAB_DIR) not in sys.path:
        sys.path.insert(0, str(AUGLAB_DIR))


def listed_kinds() -> List[Tuple[str, str, str]]:
    """(name, cuda, lift) of every line of the one kind list ``augment/transforms/kinds.inc``, in its order."""
    rows = []
    for line in (REPO_ROOT / "augment" / "transforms" / "kinds.inc").read_text().splitlines():
        m = re.match(r"AUGMENTD_KIND\(\s*\w+\s*,\s*(\w+)\s*,[^,]+,\s*(\w+)\s*,\s*(\w+)\s*\)", line)
        if m:
            rows.append((m.group(1), m.group(2), m.group(3)))
    return rows


_LIB_NAME = "libaugment_capi.so"
_DEFAULT_BUILD_DIR = "build"

# numpy dtype <-> the dtype names of the C ABI.
_NP_TO_NAME: Dict[np.dtype, str] = {
    np.dtype(np.float32): "float32",
    np.dtype(np.float16): "float16",
    np.dtype(np.float64): "float64",
    np.dtype(np.int8): "int8",
    np.dtype(np.int16): "int16",
    np.dtype(np.int32): "int32",
    np.dtype(np.int64): "int64",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.bool_): "bool",
}
_NAME_TO_NP: Dict[str, np.dtype] = {name: dt for dt, name in _NP_TO_NAME.items()}
_NAME_TO_NP["bfloat16"] = np.dtype(np.uint16)  # raw bits; numpy has no bfloat16


class AugmentdError(RuntimeError):
    """A request the engine refused; ``status`` is the full status text, e.g. ``"INVALID_ARGUMENT: ..."``."""

    def __init__(self, status: str):
        super().__init__(status)
        self.status = status

    @property
    def code(self) -> str:
        """The status code name before the first colon (``"INVALID_ARGUMENT"``), or ``""``."""
        head, sep, _ = self.status.partition(":")
        return head.strip() if sep else ""


def library_path() -> Path:
    """Where the C ABI library is expected (it may not exist); see the module docstring for the rules."""
    explicit = os.environ.get("AUGMENTD_CAPI_LIB")
    if explicit:
        return Path(explicit)
    build_dir = Path(os.environ.get("AUGMENTD_BUILD_DIR", _DEFAULT_BUILD_DIR))
    if not build_dir.is_absolute():
        build_dir = REPO_ROOT / build_dir
    return build_dir / "augment" / _LIB_NAME


def library_available() -> bool:
    """True when the library file exists (tests skip only when it does not)."""
    return library_path().is_file()


_lib: Optional[ctypes.CDLL] = None
_lib_path: Optional[Path] = None
_lib_lock = threading.Lock()


def _declare(lib: ctypes.CDLL) -> None:
    p = ctypes.c_void_p
    lib.augmentd_run_json.argtypes = [ctypes.c_char_p]
    lib.augmentd_run_json.restype = p
    lib.augmentd_result_ok.argtypes = [p]
    lib.augmentd_result_ok.restype = ctypes.c_int
    lib.augmentd_result_error.argtypes = [p]
    lib.augmentd_result_error.restype = ctypes.c_char_p
    lib.augmentd_result_json.argtypes = [p]
    lib.augmentd_result_json.restype = ctypes.c_char_p
    lib.augmentd_result_num_tensors.argtypes = [p]
    lib.augmentd_result_num_tensors.restype = ctypes.c_int
    lib.augmentd_result_tensor_name.argtypes = [p, ctypes.c_int]
    lib.augmentd_result_tensor_name.restype = ctypes.c_char_p
    lib.augmentd_result_tensor_dtype.argtypes = [p, ctypes.c_int]
    lib.augmentd_result_tensor_dtype.restype = ctypes.c_char_p
    lib.augmentd_result_tensor_ndim.argtypes = [p, ctypes.c_int]
    lib.augmentd_result_tensor_ndim.restype = ctypes.c_int
    lib.augmentd_result_tensor_shape.argtypes = [p, ctypes.c_int]
    lib.augmentd_result_tensor_shape.restype = ctypes.POINTER(ctypes.c_int64)
    lib.augmentd_result_tensor_data.argtypes = [p, ctypes.c_int]
    lib.augmentd_result_tensor_data.restype = p
    lib.augmentd_result_free.argtypes = [p]
    lib.augmentd_result_free.restype = None


def load_library(path: Optional[Path] = None) -> ctypes.CDLL:
    """Loads (once) and returns the C ABI library. Raises ``FileNotFoundError`` if the file is absent."""
    global _lib, _lib_path
    path = Path(path) if path is not None else library_path()
    with _lib_lock:
        if _lib is not None and _lib_path == path:
            return _lib
        if not path.is_file():
            raise FileNotFoundError(f"augmentd C ABI library not found at {path} "
                                    f"(set AUGMENTD_CAPI_LIB or AUGMENTD_BUILD_DIR)")
        lib = ctypes.CDLL(str(path))
        _declare(lib)
        _lib, _lib_path = lib, path
        return lib


def tensor_ref(array: np.ndarray) -> Dict[str, Any]:
    """The JSON reference to a C-contiguous numpy array. The caller keeps ``array`` alive during the call."""
    if not array.flags["C_CONTIGUOUS"]:
        raise ValueError("tensor_ref needs a C-contiguous array (use np.ascontiguousarray)")
    try:
        dtype = _NP_TO_NAME[array.dtype]
    except KeyError as e:
        raise TypeError(f"unsupported dtype {array.dtype}") from e
    return {"data": int(array.ctypes.data), "dtype": dtype, "shape": [int(s) for s in array.shape]}


def _copy_tensor(lib: ctypes.CDLL, res: int, i: int) -> Tuple[str, np.ndarray]:
    name = lib.augmentd_result_tensor_name(res, i).decode()
    dtype_name = lib.augmentd_result_tensor_dtype(res, i).decode()
    if dtype_name not in _NAME_TO_NP:
        raise AugmentdError(f"INTERNAL: output tensor {name!r} has unknown dtype {dtype_name!r}")
    dtype = _NAME_TO_NP[dtype_name]
    ndim = lib.augmentd_result_tensor_ndim(res, i)
    shape_ptr = lib.augmentd_result_tensor_shape(res, i)
    shape = tuple(int(shape_ptr[d]) for d in range(ndim)) if ndim > 0 else ()
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    nbytes = n * dtype.itemsize
    data = lib.augmentd_result_tensor_data(res, i)
    if nbytes == 0:
        return name, np.empty(shape, dtype=dtype)
    if not data:
        raise AugmentdError(f"INTERNAL: output tensor {name!r} has no data")
    buf = ctypes.string_at(data, nbytes)
    return name, np.frombuffer(buf, dtype=dtype).reshape(shape).copy()


def run(request: Mapping[str, Any], **arrays: np.ndarray) -> Tuple[Any, Dict[str, np.ndarray]]:
    """Runs one request through ``augmentd_run_json``.

    Args:
      request: the JSON request as a dict (``"op"`` and its fields). It is not modified.
      **arrays: numpy arrays to pass as top-level tensor fields (``image=...``, ``seg=...``). Each is made
        C-contiguous (a copy if needed) and referenced by address; the copies live until the call returns.
        A request may also carry references built with ``tensor_ref`` in nested places.

    Returns:
      ``(json_out, tensors)``: the parsed JSON output (``None`` if the engine returned an empty string) and the
      output tensors by name, each copied into a new numpy array (C order).

    Raises:
      AugmentdError: the engine returned an error status (the message is the status text).
      FileNotFoundError: the library is absent.
    """
    lib = load_library()
    keep_alive: List[np.ndarray] = []
    req: Dict[str, Any] = dict(request)
    for name, arr in arrays.items():
        if arr is None:
            continue
        a = np.ascontiguousarray(arr)
        keep_alive.append(a)
        req[name] = tensor_ref(a)
    payload = json.dumps(req, allow_nan=False).encode()
    res = lib.augmentd_run_json(payload)
    if not res:
        raise AugmentdError("INTERNAL: augmentd_run_json returned NULL")
    try:
        if not lib.augmentd_result_ok(res):
            err = lib.augmentd_result_error(res)
            raise AugmentdError(err.decode() if err else "UNKNOWN: (no error text)")
        raw = lib.augmentd_result_json(res)
        text = raw.decode() if raw else ""
        json_out = json.loads(text) if text.strip() else None
        tensors: Dict[str, np.ndarray] = {}
        for i in range(lib.augmentd_result_num_tensors(res)):
            name, t = _copy_tensor(lib, res, i)
            tensors[name] = t
        return json_out, tensors
    finally:
        lib.augmentd_result_free(res)
        del keep_alive


def draw_params(kind: str, config: Mapping[str, Any], image_shape, seed: int, count: int) -> List[Dict[str, Any]]:
    """`count` samples' parameters of one transform as the engine draws them (apply_probability 1), without the
    "applied" flag: ready to inject with apply_transform or to give a reference implementation."""
    out, _ = run({"op": "draw_params", "transform": {"kind": kind, "config": dict(config)}, "apply_probability": 1.0,
                  "seed": seed, "first_sample_index": 0, "count": count, "image_shape": list(image_shape)})
    for p in out:
        p.pop("applied", None)
    return out
