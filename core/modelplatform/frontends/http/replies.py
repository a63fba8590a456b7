"""Writing an HttpReply through Sanic: one buffer, parts, or a stream.

(The fast lane writes its own bytes: see fastlane.head_bytes.) Parts go out
one after another under one Content-Length, so large binary outputs reach the
socket as views over their arrays, never joined; streams go out chunked as
they come, and are closed however the writing ends (a client gone stops the
producer).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import structlog
from sanic import HTTPResponse, Request

from modelplatform.dataplane.declarations import HttpReply

log = structlog.get_logger("modelplatform.frontends.http")


async def send_reply(request: Request, reply: HttpReply) -> HTTPResponse | None:
    """Answer ``request`` with ``reply``; returns Sanic's response when it is one object."""
    body = reply.body
    if isinstance(body, (bytes, bytearray)):
        return HTTPResponse(
            body, status=reply.status, headers=dict(reply.headers), content_type=reply.content_type
        )
    if reply.streamed:
        await _send_stream(request, reply, body)  # type: ignore[arg-type]  # reply.streamed: an async iterator
        return None
    parts = list(body)  # type: ignore[arg-type]  # neither buffer nor stream: parts
    headers = {**reply.headers, "content-length": str(sum(len(part) for part in parts))}
    response = await request.respond(status=reply.status, headers=headers, content_type=reply.content_type)
    for part in parts:
        if len(part):
            await response.send(part)
    return None


async def _send_stream(request: Request, reply: HttpReply, chunks: AsyncIterator[bytes]) -> None:
    response = await request.respond(
        status=reply.status, headers=dict(reply.headers), content_type=reply.content_type
    )
    try:
        async for chunk in chunks:
            if chunk:
                await response.send(chunk)
    except Exception as error:  # noqa: BLE001 - the status is gone; only closing says it failed
        log.error("reply_stream_failed", error=type(error).__name__)
        request.transport.close()
        return
    finally:
        await close_stream(chunks)
    await response.eof()


async def close_stream(chunks: Any) -> None:
    """Close an async generator now (not at garbage collection), so its producer stops."""
    close = getattr(chunks, "aclose", None)
    if close is not None:
        await close()
