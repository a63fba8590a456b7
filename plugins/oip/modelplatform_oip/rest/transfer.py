"""Request bodies in, large response bodies out, without extra copies.

The infer route is a streaming route: Sanic would otherwise collect the
body as a list of 64 KiB chunks and join them, holding the body twice. Here
a body with a Content-Length is read straight into one buffer of that size,
which the binary codec then hands to the model as numpy views.

Responses of ``STREAM_FROM_BYTES`` or more are written part by part (the
JSON header, then each binary output as a view over its array) with a
Content-Length, so neither a joined body nor Sanic's header+body
concatenation copies them; smaller ones take the cheaper one-shot response.
"""

from __future__ import annotations

from sanic import HTTPResponse, Request

from modelplatform import InvalidArgument

from .codec import EncodedResponse

STREAM_FROM_BYTES = 1 << 20


async def read_body(request: Request, limit: int) -> bytes | bytearray:
    """The whole body: one buffer of Content-Length bytes, or the joined chunks.

    Sanic lifts its size limit for streaming handlers; ``limit`` puts it back,
    so a declared length over it is refused (413) before anything is read.
    """
    stream = request.stream
    length = request.headers.get("content-length")
    if stream is None:
        return request.body
    stream.request_max_size = limit
    if length is None or not length.isdigit():
        return b"".join([chunk async for chunk in stream])
    first = await stream.read()  # raises PayloadTooLarge past the limit, before any buffer
    if first is None:
        return b""
    if len(first) == int(length):
        return first  # the common small body: one chunk, no buffer
    buffer = bytearray(int(length))
    view = memoryview(buffer)
    offset = 0
    chunk: bytes | None = first
    while chunk is not None:
        end = offset + len(chunk)
        if end > len(buffer):
            raise InvalidArgument("the request body is longer than its Content-Length")
        view[offset:end] = chunk
        offset = end
        chunk = await stream.read()
    if offset != len(buffer):
        raise InvalidArgument("the request body is shorter than its Content-Length")
    return buffer


async def send_parts(request: Request, encoded: EncodedResponse) -> HTTPResponse:
    """Write the parts one after another under one Content-Length."""
    parts = encoded.body if isinstance(encoded.body, list) else [encoded.body]
    headers = {**encoded.headers, "Content-Length": str(encoded.size)}
    response = await request.respond(headers=headers, content_type=encoded.content_type)
    for part in parts:
        if len(part):
            await response.send(part)  # type: ignore[arg-type]
    return response
