"""Sanic's HTTPResponse with a cheaper header encoding.

Sanic strips CR, LF and NUL from every header name and value of every
response with ``str.translate`` (about 3 us of a 120 us request). The same
guarantee holds when only values that are not printable go through it:
those three characters are not printable, so a printable value has nothing
to strip.
"""

from __future__ import annotations

from collections.abc import Iterable

from sanic import HTTPResponse
from sanic.helpers import has_message_body

_STRIPPED = str.maketrans("", "", "\r\n\x00")


class OipResponse(HTTPResponse):
    __slots__ = ()

    @property
    def processed_headers(self) -> Iterable[tuple[bytes, bytes]]:  # type: ignore[override]
        headers = self.headers
        if has_message_body(self.status):
            headers.setdefault("content-type", self.content_type)
        return [(_clean(name).encode("ascii"), _clean(f"{value}").encode(errors="surrogateescape"))
                for name, value in headers.items()]


def _clean(text: str) -> str:
    return text if text.isprintable() else text.translate(_STRIPPED)
