"""The HTTP timeouts, the same on the fast lane and on the Sanic path.

Request timeout: the longest a client may stay silent while the server
waits for the rest of a request (its head or its body); then the answer is
408 in the dialect's shape and the connection closes. It defends against
clients that open a request and stall (slow loris). Response timeout: the
longest a route takes to produce its answer once the request was read (for
a streamed answer: until streaming starts); then the handler is cancelled,
which unwinds the dataplane call and whatever backend work can be
cancelled, and the answer is the dialect's DEADLINE_EXCEEDED (504). It also
becomes the requests' transport deadline (deadlines.py), so a request still
queued when it passes never reaches a backend. Sanic's own response timeout
(a 503 after 60 s of silence) is lifted: a long inference is cut only when
the operator configured a response timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from modelplatform.base.deadlines import transport_deadline
from modelplatform.base.errors import DeadlineExceeded
from modelplatform.dataplane.declarations import HttpReply

if TYPE_CHECKING:
    from modelplatform.base.settings import Settings

#: What Sanic is given for "no limit": a year (its timers need a number).
NO_LIMIT_S = 365 * 24 * 3600.0
RESPONSE_TIMEOUT = "HTTP response timeout"


@dataclass(frozen=True, slots=True)
class HttpTimeouts:
    """The settings' HTTP timeouts in seconds; None where the setting is 0 (no limit)."""

    request_s: float | None
    response_s: float | None
    keep_alive_s: float

    @classmethod
    def of(cls, settings: Settings) -> HttpTimeouts:
        return cls(
            settings.http_request_timeout_secs or None,
            settings.http_response_timeout_secs or None,
            settings.http_keep_alive_timeout_secs,
        )


async def within_response_timeout(reply: Awaitable[HttpReply], timeouts: HttpTimeouts) -> HttpReply:
    """Await a route handler's reply; past the response timeout, cancel it and raise DEADLINE_EXCEEDED."""
    seconds = timeouts.response_s
    if seconds is None:
        return await reply
    with transport_deadline(seconds, RESPONSE_TIMEOUT):
        try:
            async with asyncio.timeout(seconds) as limit:
                return await reply
        except TimeoutError:
            if not limit.expired():  # the handler's own TimeoutError, not ours
                raise
    raise DeadlineExceeded(f"{RESPONSE_TIMEOUT} of {seconds:g} s expired")
