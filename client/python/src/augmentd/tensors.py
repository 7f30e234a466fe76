"""Conversion between ``augmentd.v1.Tensor`` (inline bytes) and numpy arrays / torch tensors. Tensors that
reference shared memory or CUDA IPC slots are resolved by ``augmentd.slots.SlotSet``."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from augmentd.v1 import tensor_pb2

# numpy has no bfloat16: those tensors come back as uint16 bit patterns (``to_torch`` reinterprets them).
_NUMPY = {
    tensor_pb2.DTYPE_FLOAT32: np.float32,
    tensor_pb2.DTYPE_FLOAT16: np.float16,
    tensor_pb2.DTYPE_BFLOAT16: np.uint16,
    tensor_pb2.DTYPE_INT8: np.int8,
    tensor_pb2.DTYPE_INT16: np.int16,
    tensor_pb2.DTYPE_INT32: np.int32,
    tensor_pb2.DTYPE_INT64: np.int64,
    tensor_pb2.DTYPE_UINT8: np.uint8,
    tensor_pb2.DTYPE_BOOL: np.bool_,
}
_FROM_NUMPY = {np.dtype(np.float32): tensor_pb2.DTYPE_FLOAT32, np.dtype(np.float16): tensor_pb2.DTYPE_FLOAT16,
               np.dtype(np.int8): tensor_pb2.DTYPE_INT8, np.dtype(np.int16): tensor_pb2.DTYPE_INT16,
               np.dtype(np.bool_): tensor_pb2.DTYPE_BOOL}


def dtype_name(dtype: int) -> str:
    """``DTYPE_FLOAT32`` → ``"float32"``."""
    return tensor_pb2.DType.Name(dtype).removeprefix("DTYPE_").lower()


def numpy_dtype(dtype: int):
    """The numpy dtype of an augmentd dtype (bfloat16 → uint16 bit patterns)."""
    if dtype not in _NUMPY:
        raise ValueError(f"unsupported dtype {dtype}")
    return _NUMPY[dtype]


def to_numpy(tensor: tensor_pb2.Tensor, data=None) -> np.ndarray:
    """A read-only numpy view of an inline tensor's bytes (``data`` if given: the bytes held elsewhere, e.g. by
    ``augmentd.wire``; else ``inline_data``, which protobuf copies on access). bfloat16 → uint16 bit patterns."""
    if tensor.WhichOneof("storage") != "inline_data":
        raise ValueError(f"tensor {tensor.name!r} is not inline (storage {tensor.WhichOneof('storage')})")
    if tensor.dtype not in _NUMPY:
        raise ValueError(f"tensor {tensor.name!r} has unsupported dtype {tensor.dtype}")
    return np.frombuffer(tensor.inline_data if data is None else data,
                         dtype=_NUMPY[tensor.dtype]).reshape(tuple(tensor.shape))


def to_torch(tensor: tensor_pb2.Tensor, device: Optional[Any] = None, array: Optional[np.ndarray] = None):
    """A torch tensor holding a copy of an inline tensor (bfloat16 kept as bfloat16), on ``device`` if given.
    ``array``: its numpy view when already made (``to_numpy``)."""
    import torch

    if array is None:
        array = to_numpy(tensor)
    out = torch.from_numpy(array.copy())
    if tensor.dtype == tensor_pb2.DTYPE_BFLOAT16:
        out = out.view(torch.bfloat16)
    return out.to(device) if device is not None else out


def from_numpy(array: np.ndarray, name: str = "") -> tensor_pb2.Tensor:
    """An inline tensor (C order, little-endian) from a numpy array of float32/float16/int8/int16/bool."""
    array = np.ascontiguousarray(array)
    if array.dtype not in _FROM_NUMPY:
        raise ValueError(f"{name or 'array'}: dtype {array.dtype} has no augmentd counterpart")
    return tensor_pb2.Tensor(name=name, dtype=_FROM_NUMPY[array.dtype], shape=list(array.shape),
                             inline_data=array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes())
