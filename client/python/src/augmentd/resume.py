"""Dataset-mode batches that survive a dropped connection or a restarted server.

    with ResumingBatches("unix:///run/augmentd.sock", config, start_batch_index=0) as batches:
        for batch in batches:          # batch.batch_index = 0, 1, 2, ... with no gap and no repeat
            train_step(batch.torch())

Batches are a pure function of (session config, seed, batch index) — sample j of batch b is global sample
b * batch_size + j for the sampler and the augmentation streams alike — so a session re-opened at the next batch
index continues the exact sequence. When the stream fails with UNAVAILABLE (server gone, connection lost),
CANCELLED, NOT_FOUND or FAILED_PRECONDITION (a restarted server no longer knows the session), the iterator closes
what is left, reconnects to the same target (waiting up to ``reconnect_timeout`` seconds for it to serve: only
UNAVAILABLE is retried while opening), opens the session again at ``next_batch_index`` and goes on; after ``max_reconnects`` consecutive failures without a
batch in between it raises the last error. Other errors (INVALID_ARGUMENT, DATA_LOSS, ...) are raised at once.

Lifetime: a batch taken before a reconnect keeps its data for inline delivery; for HOST_SHM / CUDA_IPC delivery
its slot belongs to the old session and must not be used after the next ``next()``.
"""
from __future__ import annotations

import time
from typing import Iterator, Optional

import grpc

from augmentd.client import Client
from augmentd.sessions import AugmentdError, Batch, BatchStream, Session
from augmentd.v1 import session_pb2

RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.NOT_FOUND,
                       grpc.StatusCode.FAILED_PRECONDITION})


class ResumingBatches:
    """An iterator of ``Batch`` for one dataset-mode ``config`` that reconnects and resumes (module docstring).

    ``next_batch_index`` is the index of the next batch it will return; ``reconnects`` counts the resumptions.
    ``client_kwargs`` go to every ``Client`` it creates (``tls``, ``token``, ``connect_timeout``)."""

    def __init__(self, target: str, config: session_pb2.SessionConfig, start_batch_index: int = 0,
                 credits: int = 4, reconnect_timeout: float = 60.0, max_reconnects: int = 5,
                 client_kwargs: Optional[dict] = None):
        self.target = target
        self.config = config
        self.next_batch_index = start_batch_index
        self.credits = credits
        self.reconnect_timeout = reconnect_timeout
        self.max_reconnects = max_reconnects
        self.reconnects = 0
        self._client_kwargs = dict(client_kwargs or {})
        self._client: Optional[Client] = None
        self._session: Optional[Session] = None
        self._stream: Optional[BatchStream] = None
        self._closed = False

    def _open(self, deadline: float) -> None:
        last: Optional[BaseException] = None
        while True:
            try:
                kwargs = dict(self._client_kwargs)
                kwargs.setdefault("connect_timeout", max(0.5, min(5.0, deadline - time.monotonic())))
                self._client = Client(self.target, **kwargs)
                self._session = self._client.open_session(self.config, start_batch_index=self.next_batch_index)
                self._stream = self._client.stream_batches(self._session, credits=self.credits,
                                                           start_batch_index=self.next_batch_index)
                return
            except (grpc.FutureTimeoutError, AugmentdError) as err:
                if isinstance(err, AugmentdError) and err.code != grpc.StatusCode.UNAVAILABLE:
                    raise  # the server answered: a bad config or a missing dataset does not heal by retrying
                last = err
                self._drop()
            if time.monotonic() >= deadline:
                raise TimeoutError(f"augmentd at {self.target} did not come back within {self.reconnect_timeout} s: "
                                   f"{last}")
            time.sleep(0.2)

    def _drop(self) -> None:
        """Forgets the current stream, session and channel (best effort: the server may be gone)."""
        stream, client, session = self._stream, self._client, self._session
        self._stream = self._client = self._session = None
        if stream is not None:
            stream.close()
        if client is not None:
            if session is not None:
                try:
                    client.close_session(session, timeout=2.0)
                except AugmentdError:
                    pass
            client.close()

    def __iter__(self) -> Iterator[Batch]:
        return self

    def __next__(self) -> Batch:
        if self._closed:
            raise StopIteration
        failures = 0
        while True:
            if self._stream is None:
                self._open(time.monotonic() + self.reconnect_timeout)
            try:
                batch = next(self._stream)
            except AugmentdError as err:
                if err.code not in RETRYABLE or failures >= self.max_reconnects:
                    raise
                failures += 1
                self.reconnects += 1
                self._drop()
                continue
            except StopIteration:
                self.close()
                raise
            if batch.batch_index != self.next_batch_index:
                raise RuntimeError(f"augmentd sent batch {batch.batch_index}, expected {self.next_batch_index}")
            self.next_batch_index += 1
            return batch

    def close(self) -> None:
        self._closed = True
        self._drop()

    def __enter__(self) -> "ResumingBatches":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
