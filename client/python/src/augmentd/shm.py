"""Patch-mode inputs by reference: a client-owned POSIX shared-memory buffer registered with a session, so that
``Client.augment`` sends a reference instead of the patch bytes (the server needs ``--allow_client_shm``).

    region = augmentd.shm.SharedInput("in", 64 << 20)          # creates /dev/shm/augmentd-in-<pid>-<n>
    session = client.open_session(augmentd.patch_session_config(...), input_regions=[region])
    image = region.array(0, (2, 1, 205, 205, 205), np.float32)  # write the patches here
    seg = region.array(image.nbytes, (2, 1, 205, 205, 205), np.int16)
    batch = client.augment(session, region.tensor(image, "image"), region.tensor(seg, "segmentation"))
    ...; client.close_session(session); region.close()

The server maps the region read-only at OpenSession and checks every reference against its size. Do not modify the
arrays while an ``augment`` call that references them runs.
"""
from __future__ import annotations

import itertools
import mmap
import os

import numpy as np

from augmentd.v1 import tensor_pb2

from .tensors import _FROM_NUMPY

_counter = itertools.count()


class SharedInput:
    """A POSIX shared-memory object of ``byte_size`` bytes created by this process (mode 0600), mapped read-write."""

    def __init__(self, name: str, byte_size: int):
        if byte_size <= 0:
            raise ValueError("byte_size must be > 0")
        self.name = name
        self.key = f"/augmentd-in-{os.getpid()}-{next(_counter)}"
        self.byte_size = byte_size
        self._path = "/dev/shm" + self.key
        fd = os.open(self._path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            os.ftruncate(fd, byte_size)
            self._map = mmap.mmap(fd, byte_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        self._base = np.frombuffer(self._map, dtype=np.uint8)

    def region(self) -> tensor_pb2.HostShmRegion:
        """The ``HostShmRegion`` to register (``Client.open_session(..., input_regions=[this])``)."""
        return tensor_pb2.HostShmRegion(name=self.name, key=self.key, offset=0, byte_size=self.byte_size)

    def array(self, offset: int, shape, dtype) -> np.ndarray:
        """A writable numpy view of the region at byte ``offset``."""
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        return self._base[offset:offset + count * dtype.itemsize].view(dtype).reshape(tuple(shape))

    def tensor(self, array: np.ndarray, name: str = "") -> tensor_pb2.Tensor:
        """A ``Tensor`` referencing ``array``, which must be a C-contiguous view of this region (``array()``)."""
        if not array.flags.c_contiguous or array.dtype not in _FROM_NUMPY:
            raise ValueError(f"{name or 'array'}: must be a C-contiguous float32/float16/int8/int16/bool array")
        offset = array.ctypes.data - self._base.ctypes.data
        if offset < 0 or offset + array.nbytes > self.byte_size:
            raise ValueError(f"{name or 'array'}: is not a view of shared input region {self.name!r}")
        return tensor_pb2.Tensor(name=name, dtype=_FROM_NUMPY[array.dtype], shape=list(array.shape),
                                 host_shm=tensor_pb2.HostShmRef(region=self.name, offset=offset,
                                                                byte_size=array.nbytes))

    def close(self) -> None:
        """Unlinks the object (the server keeps its mapping until the session closes)."""
        try:
            os.unlink(self._path)
        except FileNotFoundError:
            pass
        self._base = None
        try:
            self._map.close()
        except BufferError:
            pass

    def __enter__(self) -> "SharedInput":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
