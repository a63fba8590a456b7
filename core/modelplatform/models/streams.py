"""Closing a backend's response stream when its consumer stops early."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TypeVar

T = TypeVar("T")


@contextlib.asynccontextmanager
async def closing_stream(responses: AsyncIterator[T]) -> AsyncGenerator[AsyncIterator[T], None]:
    """``contextlib.aclosing`` for any ``Backend.stream`` result.

    The contract promises an async iterator, not a generator: one without ``aclose``
    (a class with ``__anext__``) has nothing to close, where ``aclosing`` would raise.
    """
    try:
        yield responses
    finally:
        close = getattr(responses, "aclose", None)
        if close is not None:
            await close()
