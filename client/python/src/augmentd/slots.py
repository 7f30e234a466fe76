"""Output slots of HOST_SHM / CUDA_IPC sessions: opened once at ``Client.open_session`` and read in place.

A batch delivered through a slot carries tensor references (region = slot name, offset, byte size) and a
``SlotLease``; ``SlotSet`` turns the references into numpy arrays / torch tensors that view the slot memory
without copying:

* HOST_SHM: every slot is a POSIX shared-memory object of the server (``/dev/shm/augmentd-<pid>-<session>-<i>``,
  mode 0600: the client must run as the server's user on the same host, or share its ``/dev/shm``), mapped once.
* CUDA_IPC: every slot is a cudaMalloc allocation of the server, opened once with cudaIpcOpenMemHandle on the GPU
  with the slot's UUID (``augmentd.cuda_ipc``); tensors are torch CUDA tensors on that device.

Lifetime: the server never rewrites a slot while the client holds its lease. ``BatchStream`` releases a batch's
lease when a later batch is taken (keeping the ``hold`` most recent ones) or when the stream closes; after that the
slot may be overwritten, so views of it must not be used any more — ``.clone()`` what must live longer.
"""
from __future__ import annotations

import mmap
import os
from typing import Dict, List

import numpy as np

from augmentd.v1 import server_info_pb2, session_pb2, tensor_pb2

from .tensors import numpy_dtype


class HostShmMemory:
    """One host shared-memory slot mapped read-write (the contents belong to the client while it holds the lease)."""

    def __init__(self, key: str, offset: int, byte_size: int):
        path = key if key.startswith("/proc/") else "/dev/shm/" + key.lstrip("/")
        fd = os.open(path, os.O_RDWR)
        try:
            self._map = mmap.mmap(fd, offset + byte_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        self.key = key
        self.offset = offset
        self.byte_size = byte_size
        self.buffer = memoryview(self._map)[offset:offset + byte_size]

    def array(self, offset: int, shape, dtype) -> np.ndarray:
        count = int(np.prod(shape, dtype=np.int64))
        return np.frombuffer(self.buffer, dtype=dtype, count=count, offset=offset).reshape(tuple(shape))

    def close(self) -> None:
        try:
            self.buffer.release()
            self._map.close()
        except BufferError:
            pass  # arrays still view it: the mapping goes when they do


class SlotSet:
    """The output slots of one session, by region name ("slot0", ...)."""

    def __init__(self, response: session_pb2.OpenSessionResponse):
        self.delivery = response.delivery
        self.slots: Dict[str, object] = {}
        # torch views by (storage, region, offset, shape, dtype): a slot's layout repeats batch after batch, so the
        # view made for one batch serves every later batch in that slot (making one costs tens of microseconds).
        self._views: Dict[tuple, object] = {}
        try:
            for slot in response.output_slots:
                which = slot.WhichOneof("region")
                if which == "host_shm":
                    r = slot.host_shm
                    self.slots[r.name] = HostShmMemory(r.key, r.offset, r.byte_size)
                elif which == "cuda_ipc":
                    from .cuda_ipc import CudaIpcMemory

                    r = slot.cuda_ipc
                    self.slots[r.name] = CudaIpcMemory(r.mem_handle, r.byte_size, r.device_uuid, r.event_handle)
        except BaseException:
            self.close()
            raise

    def __len__(self) -> int:
        return len(self.slots)

    def _memory(self, region: str):
        try:
            return self.slots[region]
        except KeyError:
            raise ValueError(f"batch references unknown output slot {region!r}") from None

    def numpy(self, tensor: tensor_pb2.Tensor) -> np.ndarray:
        """A numpy view of a host_shm tensor (no copy); bfloat16 as uint16 bit patterns."""
        if tensor.WhichOneof("storage") != "host_shm":
            raise ValueError(f"tensor {tensor.name!r} is not in host shared memory; use Batch.torch()")
        ref = tensor.host_shm
        return self._memory(ref.region).array(ref.offset, tensor.shape, numpy_dtype(tensor.dtype))

    def torch(self, tensor: tensor_pb2.Tensor, device=None):
        """A torch view (no copy) of a slot tensor: CPU for host_shm, the slot's GPU for cuda_ipc. With ``device``
        given (and different), the result is a copy on that device. Views are made once per slot layout: a later
        batch in the same slot at the same offset gets the same tensor object (its contents are that batch's:
        the lifetime rule of the module docstring is unchanged)."""
        which = tensor.WhichOneof("storage")
        if which not in ("host_shm", "cuda_ipc"):
            return self._make_torch(tensor, which)  # raises: not a slot tensor
        ref = getattr(tensor, which)
        key = (which, ref.region, ref.offset, tuple(tensor.shape), tensor.dtype)
        out = self._views.get(key)
        if out is None:
            out = self._views[key] = self._make_torch(tensor, which)
        return out.to(device) if device is not None else out

    def _make_torch(self, tensor: tensor_pb2.Tensor, which: str):
        import torch

        bf16 = tensor.dtype == tensor_pb2.DTYPE_BFLOAT16
        if which == "cuda_ipc":
            ref = tensor.cuda_ipc
            out = self._memory(ref.region).tensor(ref.offset, tensor.shape, numpy_dtype(tensor.dtype), bf16)
        else:
            out = torch.from_numpy(self.numpy(tensor))
            if bf16:
                out = out.view(torch.bfloat16)
        return out

    def data_ptr(self, tensor: tensor_pb2.Tensor) -> int:
        """The address the tensor's view starts at (the opened slot's base + offset)."""
        which = tensor.WhichOneof("storage")
        ref = getattr(tensor, which)
        mem = self._memory(ref.region)
        if which == "cuda_ipc":
            return mem.base + ref.offset
        return np.frombuffer(mem.buffer, dtype=np.uint8, count=1, offset=ref.offset).ctypes.data

    def close(self) -> None:
        self._views.clear()
        for mem in self.slots.values():
            mem.close()
        self.slots.clear()


def delivery_name(kind: int) -> str:
    return server_info_pb2.DeliveryKind.Name(kind).removeprefix("DELIVERY_KIND_").lower()


__all__: List[str] = ["SlotSet", "HostShmMemory", "delivery_name"]
