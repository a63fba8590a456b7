"""HTTP streaming: how a client asks for it, and one chunk per response.

Each chunk is the JSON of one GrpsMessage (status stamped SUCCESS), with no
delimiter, as grps writes them; a ``bin_data`` request streams raw bytes.
The first response is fetched before the reply is returned, so an early
error keeps its status; an error after the first chunk ends the stream with
a FAILURE message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from modelplatform import (
    HttpReply,
    HttpRequest,
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    ModelPlatformError,
)

from ..converter import single_bytes_of, to_message
from ..options import GrpsOptions
from ..runtime import GrpsRuntime
from ..status import from_error, success
from .json_io import dump_message

#: Decodes the request when the stream starts: (payload kind, request).
Decode = Callable[[], tuple[str, InferenceRequest]]


def wants_streaming(options: GrpsOptions, request: HttpRequest, data: dict[str, Any] | None) -> bool:
    key = options.streaming_ctrl_key
    if options.streaming_ctrl_mode == "query_param":
        return str(request.query.get(key, "")).lower() == "true"
    if options.streaming_ctrl_mode == "header_param":
        return str(request.headers.get(key.lower(), "")).lower() == "true"
    value = (data or {}).get(key, False)
    if not isinstance(value, bool):
        raise InvalidArgument(f"'{key}' in the body must be a JSON boolean")
    return value


def chunk(response: InferenceResponse, kind: str) -> bytes:
    if kind == "bin_data":
        raw = single_bytes_of(response)
        if raw is not None:
            return raw
    return dump_message(success(to_message(response, kind)))


async def stream_reply(runtime: GrpsRuntime, decode: Decode) -> HttpReply:
    """The streamed reply; raises (for the dialect's error reply) when the first response fails."""
    chunks = _chunks(runtime, decode)
    first = await anext(chunks, None)
    body = _starting_with(first, chunks) if first is not None else b""
    return HttpReply(200, body, runtime.options.streaming_content_type)


async def _chunks(runtime: GrpsRuntime, decode: Decode) -> AsyncIterator[bytes]:
    kind, inference = decode()
    async with runtime.stream(inference) as responses:
        started = False
        try:
            async for item in responses:
                started = True
                yield chunk(item, kind)
        except ModelPlatformError as error:
            if not started:
                raise
            yield dump_message(from_error(error))


async def _starting_with(first: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    try:
        yield first
        async for item in rest:
            yield item
    finally:
        await rest.aclose()  # type: ignore[attr-defined]  # DataPlane.stream's answers: an async generator
