"""Body encodings: gzip/deflate request bodies and compressed responses (Triton's behaviour).

Request bodies are inflated in one bounded pass: ``decompressobj`` with
``max_length`` stops at ``limit + 1`` output bytes, so a compression bomb is
refused as soon as it passes the body limit and never inflates whole.
"""

from __future__ import annotations

import zlib

from modelplatform import InvalidArgument, PayloadTooLarge

_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
#: Response encodings in order of preference (deflate is a zlib stream, as tritonclient expects).
_PREFERENCE = ("gzip", "deflate")


def decoded_body(body: bytes, encoding: str | None, limit: int) -> bytes:
    """The body with Content-Encoding undone; never inflates past ``limit`` bytes."""
    name = (encoding or "").strip().lower()
    if not name or name == "identity":
        return body
    wbits = _WBITS.get(name)
    if wbits is None:
        raise InvalidArgument(f"unsupported Content-Encoding '{encoding}'")
    inflater = zlib.decompressobj(wbits)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as error:
        raise InvalidArgument(f"cannot decompress the {name} body: {error}") from None
    if len(data) > limit or inflater.unconsumed_tail:
        raise PayloadTooLarge(len(data), limit)
    if not inflater.eof or inflater.unused_data:
        raise InvalidArgument(f"the {name} body is truncated or has trailing data")
    return data


def response_encoding(accept: str | None) -> str | None:
    """The encoding to compress a response with, from Accept-Encoding (None: identity)."""
    if not accept:
        return None
    offered = set()
    for item in accept.lower().split(","):
        token, _, params = item.strip().partition(";")
        if params.strip().replace(" ", "") not in ("q=0", "q=0.0", "q=0.00", "q=0.000"):
            offered.add(token.strip())
    return next((name for name in _PREFERENCE if name in offered), None)


def compress(body: bytes, encoding: str) -> bytes:
    compressor = zlib.compressobj(wbits=_WBITS[encoding])
    return compressor.compress(body) + compressor.flush()
