"""Server-Sent Events framing: one ``data:`` event per JSON object.

A JSON object serialised by orjson holds no raw newline, so each event is a
single ``data:`` line followed by the blank line that ends it.
"""

from __future__ import annotations

from typing import Any

import orjson

CONTENT_TYPE = "text/event-stream; charset=utf-8"


def event(doc: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(doc) + b"\n\n"


def error_event(message: str) -> bytes:
    """An error after the stream started: the status (200) is already sent."""
    return event({"error": message})
