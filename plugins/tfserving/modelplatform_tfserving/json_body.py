"""Reading a request body as TF Serving does: NaN/Infinity tokens, first value only.

orjson parses strict JSON fast; a body it refuses (NaN/Infinity tokens,
integers past 64 bits, trailing bytes after the first value) is parsed again
with the standard library's decoder, which accepts those tokens and stops
after the first complete value, as rapidjson does in TF Serving.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from modelplatform import InvalidArgument

from .errors import format_error

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\n\r"


def parse_object(body: bytes | bytearray) -> dict[str, Any]:
    """The body's top-level JSON object, or TF Serving's parse errors."""
    if not body.strip():
        raise InvalidArgument("JSON Parse error: The document is empty")
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        doc = _lenient(body)
    if not isinstance(doc, dict):
        raise format_error(doc, "Is not object")
    return doc


def _lenient(body: bytes | bytearray) -> Any:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidArgument(
            f"JSON Parse error: Invalid encoding in string. at offset: {error.start}"
        ) from None
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, _ = _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as error:
        raise InvalidArgument(f"JSON Parse error: {error.msg} at offset: {error.pos}") from None
    except RecursionError:
        raise InvalidArgument("JSON Parse error: the document is nested too deeply") from None
    return value
