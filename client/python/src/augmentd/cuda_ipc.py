"""CUDA IPC for the augmentd client: opens the server's ``cudaIpcMemHandle_t`` / ``cudaIpcEventHandle_t`` through
ctypes into libcudart (the one torch loaded when possible) and wraps device memory as torch tensors without a copy
(``torch.as_tensor`` over an object exposing ``__cuda_array_interface__``).

Each handle is opened once per process (CUDA refuses to open the same handle twice in one process) and closed
with ``CudaIpcMemory.close()``. The runtime uses the device's primary context, which torch shares.
"""
from __future__ import annotations

import ctypes
import glob
import os
import sys
from typing import Sequence

import numpy as np

_CUDA_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1


class _IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_ubyte * 64)]

    @classmethod
    def of(cls, handle: bytes) -> "_IpcHandle":
        """The handle's 64 bytes, copied verbatim (a c_char array would stop at the first NUL byte)."""
        if len(handle) != ctypes.sizeof(cls):
            raise ValueError(f"a CUDA IPC handle has {ctypes.sizeof(cls)} bytes, got {len(handle)}")
        return cls.from_buffer_copy(handle)


_cudart = None


def _candidates():
    env = os.environ.get("AUGMENTD_CUDART")
    if env:
        yield env
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        yield name  # dlopen by soname returns the copy torch already loaded, if any
    for base in sys.path:
        yield from sorted(glob.glob(os.path.join(base, "nvidia", "cu*", "lib", "libcudart.so*")), reverse=True)
        yield from sorted(glob.glob(os.path.join(base, "nvidia", "cuda_runtime", "lib", "libcudart.so*")), reverse=True)
    yield from sorted(glob.glob("/usr/local/cuda/lib64/libcudart.so*"), reverse=True)


def cudart() -> ctypes.CDLL:
    """The CUDA runtime library (set ``AUGMENTD_CUDART`` to a path to choose one)."""
    global _cudart
    if _cudart is None:
        try:
            import torch  # noqa: F401  (loads its libcudart first, so the soname lookup finds that one)
        except ImportError:
            pass
        errors = []
        for path in _candidates():
            try:
                lib = ctypes.CDLL(path)
                lib.cudaIpcOpenMemHandle  # noqa: B018  (is it really cudart?)
            except (OSError, AttributeError) as err:
                errors.append(f"{path}: {err}")
                continue
            lib.cudaIpcOpenMemHandle.argtypes = [ctypes.POINTER(ctypes.c_void_p), _IpcHandle, ctypes.c_uint]
            lib.cudaIpcCloseMemHandle.argtypes = [ctypes.c_void_p]
            lib.cudaIpcOpenEventHandle.argtypes = [ctypes.POINTER(ctypes.c_void_p), _IpcHandle]
            lib.cudaEventDestroy.argtypes = [ctypes.c_void_p]
            lib.cudaStreamWaitEvent.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint]
            lib.cudaSetDevice.argtypes = [ctypes.c_int]
            lib.cudaGetErrorName.restype = ctypes.c_char_p
            _cudart = lib
            break
        else:
            raise RuntimeError("augmentd: cannot load libcudart for CUDA IPC delivery:\n  " + "\n  ".join(errors[-4:]))
    return _cudart


def _check(rc: int, what: str) -> None:
    if rc != 0:
        name = cudart().cudaGetErrorName(rc)
        raise RuntimeError(f"{what} failed: {name.decode() if name else rc}")


def device_index_for_uuid(uuid: str) -> int:
    """The torch device index of the GPU with this UUID ("GPU-..."): ordinals differ between processes."""
    import torch

    want = uuid.lower().removeprefix("gpu-")
    for i in range(torch.cuda.device_count()):
        got = str(getattr(torch.cuda.get_device_properties(i), "uuid", "")).lower().removeprefix("gpu-")
        if got and got == want:
            return i
    raise RuntimeError(f"augmentd: no visible CUDA device has UUID {uuid} (is this client on the server's GPU?)")


class _CudaArray:
    """A minimal ``__cuda_array_interface__`` (v3) exporter over device memory."""

    def __init__(self, ptr: int, shape: Sequence[int], typestr: str, owner):
        self.__cuda_array_interface__ = {"shape": tuple(int(d) for d in shape), "typestr": typestr,
                                         "data": (int(ptr), False), "version": 3, "strides": None, "stream": None}
        self._owner = owner  # keeps the opened handle alive as long as a tensor uses it


class CudaIpcMemory:
    """One server slot opened with cudaIpcOpenMemHandle (plus its event, if exported)."""

    def __init__(self, mem_handle: bytes, byte_size: int, device_uuid: str, event_handle: bytes = b""):
        import torch

        self.device_index = device_index_for_uuid(device_uuid) if device_uuid else torch.cuda.current_device()
        self.device = torch.device("cuda", self.device_index)
        self.byte_size = byte_size
        lib = cudart()
        torch.cuda.init()
        with torch.cuda.device(self.device_index):
            _check(lib.cudaSetDevice(self.device_index), "cudaSetDevice")
            ptr = ctypes.c_void_p()
            _check(lib.cudaIpcOpenMemHandle(ctypes.byref(ptr), _IpcHandle.of(mem_handle),
                                            _CUDA_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cudaIpcOpenMemHandle")
            self.base = int(ptr.value)
            self.event = None
            if len(event_handle) == 64:
                ev = ctypes.c_void_p()
                _check(lib.cudaIpcOpenEventHandle(ctypes.byref(ev), _IpcHandle.of(event_handle)), "cudaIpcOpenEventHandle")
                self.event = ev.value

    def tensor(self, offset: int, shape: Sequence[int], dtype: np.dtype, bfloat16: bool = False):
        """A torch tensor viewing ``[offset, offset + nbytes)`` of the slot (no copy)."""
        import torch

        if self.base is None:
            raise RuntimeError("the CUDA IPC slot is closed")
        typestr = np.dtype(dtype).str
        out = torch.as_tensor(_CudaArray(self.base + offset, shape, typestr, self), device=self.device)
        return out.view(torch.bfloat16) if bfloat16 else out

    def wait(self, stream=None) -> None:
        """Makes ``stream`` (default: torch's current stream) wait for the server's last write to this slot. The
        server already synchronises before it sends a batch, so this is optional."""
        import torch

        if self.event is not None:
            s = stream if stream is not None else torch.cuda.current_stream(self.device)
            _check(cudart().cudaStreamWaitEvent(ctypes.c_void_p(s.cuda_stream), ctypes.c_void_p(self.event), 0),
                   "cudaStreamWaitEvent")

    def record(self, stream) -> bool:
        """Records the slot's event on ``stream`` after this process's writes (an input slot: the server waits on it
        before its kernels read the slot). False when the slot has no event (then synchronise instead)."""
        if self.event is None:
            return False
        _check(cudart().cudaEventRecord(ctypes.c_void_p(self.event), ctypes.c_void_p(stream.cuda_stream)),
               "cudaEventRecord")
        return True

    def close(self) -> None:
        if self.base is not None:
            lib = cudart()
            lib.cudaSetDevice(self.device_index)
            if self.event is not None:
                lib.cudaEventDestroy(ctypes.c_void_p(self.event))
            lib.cudaIpcCloseMemHandle(ctypes.c_void_p(self.base))
            self.base = None
            self.event = None


def cuda_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False




def _allocation_range(ptr: int):
    """(base, size) of the cudaMalloc allocation holding device pointer ``ptr`` (driver cuMemGetAddressRange)."""
    cuda = ctypes.CDLL("libcuda.so.1")
    fn = cuda.cuMemGetAddressRange_v2
    fn.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t), ctypes.c_uint64]
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    rc = fn(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr))
    if rc != 0:
        raise RuntimeError(f"cuMemGetAddressRange failed: CUresult {rc}")
    return int(base.value), int(size.value)


def cuda_input_region(name: str, buffer):
    """Patch mode by reference on a GPU session: a ``CudaIpcRegion`` naming the CUDA allocation that holds the
    contiguous torch tensor ``buffer``, and the byte offset of ``buffer`` in it (add it to the offsets of the
    ``CudaIpcRef``s you send). Register the region with ``Client.open_session(..., input_regions=[region])``
    (server flag ``--allow_client_shm``); keep ``buffer`` alive and unmodified while an ``augment`` call that
    references it runs. The region is the whole cudaMalloc allocation (a block of torch's caching allocator),
    exported with ``cudaIpcGetMemHandle`` of its base pointer: register one region per allocation (e.g. one large
    buffer holding all inputs)."""
    import torch

    from augmentd.v1 import tensor_pb2

    if not buffer.is_cuda or not buffer.is_contiguous():
        raise ValueError("buffer must be a contiguous CUDA tensor")
    lib = cudart()
    ptr = buffer.data_ptr()
    with torch.cuda.device(buffer.device):
        _check(lib.cudaSetDevice(buffer.device.index), "cudaSetDevice")
        base, size = _allocation_range(ptr)
        handle = _IpcHandle()
        _check(lib.cudaIpcGetMemHandle(ctypes.byref(handle), ctypes.c_void_p(base)), "cudaIpcGetMemHandle")
    uuid = str(torch.cuda.get_device_properties(buffer.device).uuid)
    region = tensor_pb2.CudaIpcRegion(name=name, mem_handle=bytes(handle), byte_size=size,
                                      device_uuid=uuid if uuid.startswith("GPU-") else "GPU-" + uuid)
    return region, ptr - base