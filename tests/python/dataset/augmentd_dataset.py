"""ctypes wrapper around augmentd's dataset-mode C ABI (``augment/dataset/capi_dataset.h``,
``libaugment_dataset_capi.so``, CMake target ``augment_dataset_capi``).

Usage::

    import augmentd_dataset as ad

    meta, tensors = ad.call({"op": "sample_batch", "dataset": {"dir": "/pre/Dataset001_X"},
                             "fold": 0, "seed": 1, "batch_index": 0})
    data, seg = tensors["data"], tensors["seg"]        # float32 (B, C, *patch), int16 (B, 1, *patch)

Errors raise ``DatasetError`` carrying ``code`` (absl status code name, e.g. ``"NOT_FOUND"``) and the message.

Where the library is found (first that applies): ``$AUGMENTD_DATASET_CAPI_LIB`` (the ``.so`` itself);
``$AUGMENTD_BUILD_DIR/augment/dataset/libaugment_dataset_capi.so`` (relative to the repository root if
relative); ``build-ds/…`` then ``build/…`` under the repository root.
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
from pathlib import Path
from typing import Any, Dict, Mapping, Tuple

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[3]
_LIB_REL = Path("augment") / "dataset" / "libaugment_dataset_capi.so"
_lock = threading.Lock()
_lib = None


class DatasetError(RuntimeError):
    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def library_path() -> Path:
    env = os.environ.get("AUGMENTD_DATASET_CAPI_LIB")
    if env:
        return Path(env)
    build = os.environ.get("AUGMENTD_BUILD_DIR")
    if build:
        b = Path(build)
        return (b if b.is_absolute() else REPO_ROOT / b) / _LIB_REL
    for name in ("build-ds", "build"):
        p = REPO_ROOT / name / _LIB_REL
        if p.is_file():
            return p
    return REPO_ROOT / "build" / _LIB_REL


def _load():
    global _lib
    with _lock:
        if _lib is None:
            lib = ctypes.CDLL(str(library_path()))
            R = ctypes.c_void_p
            lib.augmentd_dataset_call.restype = R
            lib.augmentd_dataset_call.argtypes = [ctypes.c_char_p]
            lib.augmentd_dataset_result_code.argtypes = [R]
            lib.augmentd_dataset_result_json.restype = ctypes.c_char_p
            lib.augmentd_dataset_result_json.argtypes = [R]
            lib.augmentd_dataset_result_num_tensors.argtypes = [R]
            for fn in ("name", "dtype"):
                f = getattr(lib, f"augmentd_dataset_result_tensor_{fn}")
                f.restype = ctypes.c_char_p
                f.argtypes = [R, ctypes.c_int]
            lib.augmentd_dataset_result_tensor_ndim.argtypes = [R, ctypes.c_int]
            lib.augmentd_dataset_result_tensor_shape.restype = ctypes.POINTER(ctypes.c_int64)
            lib.augmentd_dataset_result_tensor_shape.argtypes = [R, ctypes.c_int]
            lib.augmentd_dataset_result_tensor_data.restype = ctypes.c_void_p
            lib.augmentd_dataset_result_tensor_data.argtypes = [R, ctypes.c_int]
            lib.augmentd_dataset_result_free.argtypes = [R]
            _lib = lib
    return _lib


def call(request: Mapping[str, Any]) -> Tuple[Dict[str, Any], Dict[str, np.ndarray]]:
    """Runs one request; returns (response JSON, {name: numpy array copy})."""
    lib = _load()
    r = lib.augmentd_dataset_call(json.dumps(request).encode())
    try:
        code = lib.augmentd_dataset_result_code(r)
        meta = json.loads(lib.augmentd_dataset_result_json(r).decode())
        if code != 0:
            raise DatasetError(meta.get("code", str(code)), meta.get("error", ""))
        tensors = {}
        for i in range(lib.augmentd_dataset_result_num_tensors(r)):
            name = lib.augmentd_dataset_result_tensor_name(r, i).decode()
            dtype = np.dtype(lib.augmentd_dataset_result_tensor_dtype(r, i).decode())
            ndim = lib.augmentd_dataset_result_tensor_ndim(r, i)
            shp = lib.augmentd_dataset_result_tensor_shape(r, i)
            shape = tuple(shp[k] for k in range(ndim))
            n = int(np.prod(shape)) if shape else 1
            ptr = lib.augmentd_dataset_result_tensor_data(r, i)
            if n == 0 or not ptr:
                arr = np.zeros(shape, dtype)
            else:
                buf = (ctypes.c_char * (n * dtype.itemsize)).from_address(ptr)
                arr = np.frombuffer(buf, dtype=dtype).reshape(shape).copy()
            tensors[name] = arr
        return meta, tensors
    finally:
        lib.augmentd_dataset_result_free(r)
