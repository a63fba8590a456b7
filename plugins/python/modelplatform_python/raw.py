"""A python model's optional ``http(body, headers)`` method, as a RawResponse.

The method (sync or async) returns bytes or str, a ``(body, content_type)``
pair, or an iterator / generator (sync or async) of bytes or str chunks,
which is streamed. A sync method or iterator runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from modelplatform import InvalidArgument, ModelExecutionError, ModelPlatformError, RawResponse, Unsupported

from .usercode import produced_items

OCTET_STREAM = "application/octet-stream"


async def call_http(model: Any, name: str, body: bytes, headers: Mapping[str, str]) -> RawResponse:
    method = getattr(model, "http", None)
    if method is None:
        raise no_http(name)
    try:
        if inspect.iscoroutinefunction(method) or inspect.isasyncgenfunction(method):
            result = method(body, dict(headers))
            result = await result if inspect.isawaitable(result) else result
        else:
            result = await asyncio.to_thread(method, body, dict(headers))
    except ModelPlatformError:
        raise
    except Exception as error:  # user code fails its own request only
        raise ModelExecutionError(name, error) from error
    return _to_raw(name, result)


def no_http(name: str) -> Unsupported:
    """The error for a raw request to a model without an ``http()`` method."""
    return Unsupported(f"model '{name}' has no http(body, headers) method")


def _to_raw(name: str, result: Any) -> RawResponse:
    content_type = OCTET_STREAM
    if isinstance(result, tuple) and len(result) == 2:
        result, content_type = result
    if isinstance(result, (bytes, bytearray, memoryview, str)):
        return RawResponse(_chunk(name, result), str(content_type))
    if inspect.isasyncgen(result) or isinstance(result, Iterator):
        return RawResponse(_chunks(name, result), str(content_type))
    raise InvalidArgument(
        f"model '{name}': http() must return bytes, str, (body, content_type) or an iterator, "
        f"got {type(result).__name__}"
    )


async def _chunks(name: str, produced: Any) -> AsyncIterator[bytes]:
    try:
        async for item in produced_items(produced):
            yield _chunk(name, item)
    except ModelPlatformError:
        raise
    except Exception as error:  # user code fails its own request only
        raise ModelExecutionError(name, error) from error


def _chunk(name: str, item: Any) -> bytes:
    if isinstance(item, str):
        return item.encode("utf-8")
    if isinstance(item, (bytes, bytearray, memoryview)):
        return bytes(item)
    raise InvalidArgument(f"model '{name}': http() chunk must be bytes or str, got {type(item).__name__}")
