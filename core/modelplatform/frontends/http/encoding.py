"""Content-Encoding on the HTTP port: one step every dialect shares, on both paths.

A buffered request body sent with ``Content-Encoding: gzip`` or ``deflate``
is inflated before the route's handler sees it, so every dialect accepts
compressed bodies with the same bound and the same errors. Inflation is one
bounded pass into one growing buffer: the input is fed in small slices, each
call's output is capped, and the pass stops as soon as the output passes the
route's body limit. A compression bomb therefore costs at most the limit
(plus the buffer's growth slack and one capped slice), never the bytes it
would inflate to, and never the inflated bytes twice.

Answers of ``hot`` routes (the ones that carry inference) are compressed
when the request's ``Accept-Encoding`` offers gzip or deflate (Triton
compresses its inference answers, not the rest).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import replace

from modelplatform.base.errors import InvalidArgument, PayloadTooLarge
from modelplatform.dataplane.declarations import HttpReply, HttpRequest, HttpRoute

_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
#: Reply encodings in order of preference (deflate is a zlib stream, as tritonclient expects).
_PREFERENCE = ("gzip", "deflate")
#: Compressed input fed per call: what one call may leave unconsumed (and copy) is this small.
_INPUT_SLICE = 64 * 1024
#: Output one call may produce: bounds the transient bytes object zlib builds beside the buffer.
_OUTPUT_SLICE = 4 * 1024 * 1024
_REFUSED_Q = ("q=0", "q=0.0", "q=0.00", "q=0.000")


async def call_route(route: HttpRoute, request: HttpRequest, max_request_bytes: int) -> HttpReply:
    """The route's handler (which undoes the body's Content-Encoding: sanic_app._scoped, so
    that a body which does not inflate is refused inside the request scope); its answer
    compressed when the route is hot."""
    reply = await route.handler(request)
    return encoded_reply(request.headers, reply) if route.hot else reply


def body_limit(route: HttpRoute, max_request_bytes: int) -> int:
    """The route's body limit: ``max_body_bytes`` lowers the server's, never raises it."""
    limit = route.max_body_bytes
    return max_request_bytes if limit is None else min(limit, max_request_bytes)


def decoded_request(request: HttpRequest, limit: int) -> HttpRequest:
    """``request`` with its body's Content-Encoding undone (the same object when there is none)."""
    encoding = request.headers.get("content-encoding")
    if encoding is None or request.chunks is not None:
        return request
    name = encoding.strip().lower()
    if not name or name == "identity":
        return request
    return replace(request, body=inflate(request.body, name, limit))


def inflate(body: bytes | bytearray | memoryview, encoding: str, limit: int) -> bytearray:
    """The inflated body; PayloadTooLarge as soon as it passes ``limit`` bytes."""
    wbits = _WBITS.get(encoding)
    if wbits is None:
        raise InvalidArgument(f"unsupported Content-Encoding '{encoding}'")
    inflater, out = zlib.decompressobj(wbits), bytearray()
    view, end = memoryview(body), 0
    try:
        while end < len(view) and not inflater.eof:
            _inflate_slice(inflater, view[end : end + _INPUT_SLICE], out, limit)
            end += _INPUT_SLICE
    except zlib.error as error:
        raise InvalidArgument(f"cannot decompress the {encoding} body: {error}") from None
    if not inflater.eof or inflater.unused_data or end < len(view):
        raise InvalidArgument(f"the {encoding} body is truncated or has trailing data")
    return out


def _inflate_slice(inflater: zlib._Decompress, data: memoryview | bytes, out: bytearray, limit: int) -> None:
    while data:
        room = limit - len(out)
        out += inflater.decompress(data, min(room + 1, _OUTPUT_SLICE))
        if len(out) > limit:
            raise PayloadTooLarge(len(out), limit)
        data = inflater.unconsumed_tail  # at most one input slice: a cheap copy


def reply_encoding(accept: str | None) -> str | None:
    """The encoding to compress an answer with, from Accept-Encoding (None: identity)."""
    if not accept:
        return None
    offered = set()
    for item in accept.lower().split(","):
        token, _, params = item.strip().partition(";")
        if params.strip().replace(" ", "") not in _REFUSED_Q:
            offered.add(token.strip())
    return next((name for name in _PREFERENCE if name in offered), None)


def encoded_reply(headers: Mapping[str, str], reply: HttpReply) -> HttpReply:
    """``reply`` compressed as the request's Accept-Encoding asks (successful, buffered answers only)."""
    accept = headers.get("accept-encoding")
    if not accept or reply.status != 200 or reply.streamed or "Content-Encoding" in reply.headers:
        return reply
    encoding = reply_encoding(accept)
    if encoding is None:
        return reply
    body = reply.body
    parts = [body] if isinstance(body, (bytes, bytearray, memoryview)) else list(body)  # type: ignore[arg-type]  # not a buffer: a sequence of parts here
    compressor = zlib.compressobj(wbits=_WBITS[encoding])
    compressed = b"".join([*(compressor.compress(part) for part in parts), compressor.flush()])
    return replace(reply, body=compressed, headers={**reply.headers, "Content-Encoding": encoding})
