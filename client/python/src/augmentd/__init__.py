"""augmentd — Python client of the augmentd GPU augmentation service.

    import augmentd
    with augmentd.Client("127.0.0.1:50051") as client:
        info = client.server_info()
        session = client.open_session(augmentd.dataset_session_config("/data/Dataset001_X", batch_size=2))
        with client.stream_batches(session, max_batches=20) as batches:
            for batch in batches:
                print(batch.batch_index, batch.image.shape, [t.shape for t in batch.targets])
        client.close_session(session)

The generated stubs are importable as ``augmentd.v1.<file>_pb2`` and ``augmentd.v1.service_pb2_grpc``.
"""
import os as _os

from . import _stubs

# Generated code lives in _proto/augmentd/v1 (never committed). Expose it as the subpackage augmentd.v1 so
# that the generated absolute imports ("from augmentd.v1 import tensor_pb2") resolve.
if _stubs.is_stale():
    _stubs.generate()
__path__.append(_os.path.join(_stubs.DEFAULT_OUT, "augmentd"))  # noqa: F821 (package __path__)

from .client import Client, HealthStatus  # noqa: E402
from .security import TlsConfig  # noqa: E402
from .sessions import (AugmentdError, Batch, BatchStream, Session, dataset_session_config,  # noqa: E402
                       delivery_kind, patch_session_config, trainer_config)
from .resume import ResumingBatches  # noqa: E402
from .shm import SharedInput  # noqa: E402
from .patch import PatchAugmenter  # noqa: E402

__version__ = "0.1.0"
__all__ = ["AugmentdError", "Batch", "BatchStream", "Client", "HealthStatus", "PatchAugmenter", "ResumingBatches", "Session",
           "SharedInput", "TlsConfig", "dataset_session_config", "delivery_kind", "patch_session_config", "trainer_config", "__version__"]
