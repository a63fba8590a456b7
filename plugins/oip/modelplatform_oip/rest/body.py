"""Request body helpers: Content-Encoding (gzip/deflate) with a size bound."""

from __future__ import annotations

import zlib

from modelplatform import InvalidArgument, PayloadTooLarge

_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def decoded_body(body: bytes, encoding: str | None, limit: int) -> bytes:
    """The body with Content-Encoding undone; never inflates past ``limit`` bytes."""
    if not encoding or encoding == "identity":
        return body
    wbits = _WBITS.get(encoding.strip().lower())
    if wbits is None:
        raise InvalidArgument(f"unsupported Content-Encoding '{encoding}'")
    inflater = zlib.decompressobj(wbits)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as error:
        raise InvalidArgument(f"cannot decompress the {encoding} body: {error}") from None
    if len(data) > limit or inflater.unconsumed_tail:
        raise PayloadTooLarge(len(data), limit)
    return data
