"""An nnU-Net style batch iterator over one augmentd dataset-mode session.

``next(loader)`` returns what nnU-Net's ``nnUNetDataLoader`` (behind its augmenter) returns:
``{'data': float32 (B, C, *patch) tensor, 'target': [tensor per deep-supervision scale] (or one tensor when deep
supervision is off), 'keys': [case ids]}`` — torch tensors, so ``train_step`` / ``validation_step`` are unchanged.
"""
from __future__ import annotations

from typing import Optional

from augmentd.sessions import AugmentdError


class AugmentdLoader:
    """Pulls batches of an open session over one ``StreamBatches`` call (``credits`` batches requested ahead).

    Inline batches become host tensors (pinned if ``pin_memory``, for a CUDA trainer) that nnU-Net's
    ``train_step`` moves to the device, exactly as with its own loader. Slot deliveries (HOST_SHM, CUDA_IPC) are
    handed over as the client's zero-copy views (CUDA_IPC: already on the GPU); they stay valid until the next
    ``next()``, which is how nnU-Net's training loop uses a batch.
    """

    def __init__(self, client, session, deep_supervision: bool, credits: int = 4, start_batch_index: int = 0,
                 pin_memory: bool = False, name: str = "train"):
        self.client = client
        self.session = session
        self.name = name
        self._deep_supervision = deep_supervision
        self._pin = pin_memory
        self._stream = client.stream_batches(session, credits=credits, start_batch_index=start_batch_index)
        self.batches_taken = 0
        self._closed = False

    def __iter__(self) -> "AugmentdLoader":
        return self

    def __next__(self) -> dict:
        if self._closed:
            raise RuntimeError(f"augmentd {self.name} loader: used after close()")
        try:
            batch = next(self._stream)
        except StopIteration:
            raise RuntimeError(f"augmentd {self.name} loader: the server ended the batch stream of session "
                               f"{self.session.session_id} ({self._stream.end})") from None
        except AugmentdError as err:
            raise RuntimeError(f"augmentd {self.name} loader: session {self.session.session_id} at batch "
                               f"{self.batches_taken}: {err}") from err
        image, targets = batch.torch()  # inline: copies; slot deliveries: views valid until the next batch
        if self._pin and batch.proto.image.WhichOneof("storage") == "inline_data":
            image, targets = image.pin_memory(), [t.pin_memory() for t in targets]
        self.batches_taken += 1
        return {"data": image, "target": targets if self._deep_supervision else targets[0],
                "keys": batch.case_ids}

    def close(self) -> Optional[object]:
        """Ends the stream and closes the session; returns its final SessionStats (None if already closed)."""
        if self._closed:
            return None
        self._closed = True
        self._stream.close()
        try:
            return self.client.close_session(self.session)
        except AugmentdError:  # the server may be gone already (error path): nothing left to release
            return None
