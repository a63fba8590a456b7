"""Large response bodies out without extra copies.

(Large request bodies come in as one buffer: the infer routes are registered
with ``ctx_body_buffer=True``, see modelplatform's http_server.)

Responses of ``STREAM_FROM_BYTES`` or more are written part by part (the
JSON header, then each binary output as a view over its array) with a
Content-Length, so neither a joined body nor Sanic's header+body
concatenation copies them; smaller ones take the cheaper one-shot response.
"""

from __future__ import annotations

from sanic import HTTPResponse, Request

from .codec import EncodedResponse

STREAM_FROM_BYTES = 1 << 20


async def send_parts(request: Request, encoded: EncodedResponse) -> HTTPResponse:
    """Write the parts one after another under one Content-Length."""
    parts = encoded.body if isinstance(encoded.body, list) else [encoded.body]
    headers = {**encoded.headers, "Content-Length": str(encoded.size)}
    response = await request.respond(headers=headers, content_type=encoded.content_type)
    for part in parts:
        if len(part):
            await response.send(part)  # type: ignore[arg-type]
    return response
