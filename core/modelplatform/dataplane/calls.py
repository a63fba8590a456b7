"""Counting a call in flight and into its model's statistics.

``Inference.infer`` (inference.py) does this inline (it is the hot path). Streams and raw
calls hold their model across many awaits, possibly after the method that
started them has returned (a raw call's streamed body), so a :class:`Call`
carries the bookkeeping until the call ends: an unload waits for it, and it
is counted once, as a success, a failure, or neither when the client left.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from typing import Final

import structlog

from modelplatform.base.errors import (
    Cancelled,
    DeadlineExceeded,
    ModelExecutionError,
    ModelNotFound,
    ModelPlatformError,
    QueueFull,
    RequestTimedOut,
    Unavailable,
)
from modelplatform.dataplane.draining import ServerShuttingDown
from modelplatform.models import ModelVersion
from modelplatform.models.backend import Backend
from modelplatform.models.stats import ModelStats

log = structlog.get_logger("modelplatform.dataplane.calls")
_END: Final = object()


class Call:
    """One stream or raw call on one instance, counted in flight from creation."""

    def __init__(self, model: ModelVersion, name: str, version: str) -> None:
        self.model = model
        self.name, self.version = name, version
        self.index, self.instance = _pick(model)
        self.started = time.perf_counter_ns()
        self.open = True
        model.enter()

    def succeeded(self, rows: int = 1) -> None:
        if self.open and self.model.stats is not None:
            elapsed = time.perf_counter_ns() - self.started
            self.model.stats.record_success(elapsed, 0, rows)
            self.model.stats.record_execution(rows, elapsed, self.index)
        self.release()

    def release(self) -> None:
        """Stop counting the call in flight (idempotent); no statistics when it did not end."""
        if self.open:
            self.open = False
            self.model.leave()

    @contextlib.contextmanager
    def failures_counted(self) -> Iterator[None]:
        """An error inside fails the call; anything not ours becomes ModelExecutionError."""
        try:
            yield
        except ModelPlatformError as error:
            self._fail(error)
            raise
        except Exception as error:
            failure = ModelExecutionError(self.name, error)
            self._fail(failure)
            raise failure from error

    def _fail(self, error: ModelPlatformError) -> None:
        if self.open:
            reason = failure_reason(error, in_backend=True)
            record_failure(self.name, self.version, self.model.stats, self.started, error, reason)
        self.release()


class CountedChunks:
    """A raw call's streamed body: the call stays in flight until it ends or is closed.

    Close it (``aclose``) when done reading, also after an error: a body
    never read would otherwise keep its model from unloading.
    """

    def __init__(self, chunks: AsyncIterator[bytes], call: Call) -> None:
        self._chunks = chunks
        self._call = call

    def __aiter__(self) -> CountedChunks:
        return self

    async def __anext__(self) -> bytes:
        if not self._call.open:
            raise StopAsyncIteration
        with self._call.failures_counted():
            chunk = await anext(self._chunks, _END)
        if chunk is _END:
            self._call.succeeded()
            raise StopAsyncIteration
        return chunk  # type: ignore[return-value]  # _END was ruled out above: a chunk

    async def aclose(self) -> None:
        self._call.release()
        close = getattr(self._chunks, "aclose", None)
        if close is not None:
            await close()

    def __del__(self) -> None:
        # A body dropped unread must not hold its model in flight forever.
        self._call.release()


def failure_reason(error: ModelPlatformError, in_backend: bool) -> str:
    """Triton's failure reason for ``error``; ``in_backend``: raised once scheduling began.

    Refused by the scheduler (queue full, deadline passed while waiting, the
    version unloading) is REJECTED; the client or the drain ending the call is
    CANCELED; anything else after scheduling began is BACKEND, before it OTHER.
    """
    if isinstance(error, (Cancelled, ServerShuttingDown)):
        return "CANCELED"
    if isinstance(error, (QueueFull, RequestTimedOut, DeadlineExceeded)):
        return "REJECTED"
    if not in_backend:
        return "OTHER"
    return "REJECTED" if isinstance(error, Unavailable) else "BACKEND"


def record_failure(
    name: str,
    version: str,
    stats: ModelStats | None,
    started: int,
    error: ModelPlatformError,
    reason: str = "OTHER",
) -> None:
    """Count a failed call and log it once (edges see ``error.logged`` and stay quiet)."""
    if stats is not None:
        stats.record_failure(time.perf_counter_ns() - started, reason)
    # Messages name tensors and shapes, never their contents.
    log.info("request_failed", model=name, version=version, code=error.code.value, error=error.message)
    error.logged = True


def _pick(model: ModelVersion) -> tuple[int, Backend]:
    if model.scheduler is None:  # only READY versions are looked up, and those have one
        raise ModelNotFound(model.name, model.version_str)
    return model.scheduler.pick()
