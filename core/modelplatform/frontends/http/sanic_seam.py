"""Everything the fast lane must know of Sanic's protocol object, in one place.

The lane sits in front of Sanic's HTTP/1.1 protocol on each connection and
needs five private facts about it: whether Sanic is idle (``_http.stage``,
``_http.request_body``, ``recv_buffer``), how to hand it bytes
(``data_received``), its idle clock (``_time``), its write-pause event
(``_can_write``), and its close/timeout callbacks. Nothing else in the core
touches Sanic's internals. tests/core/test_sanic_seam.py fails when a Sanic
release changes any of them; core's pyproject pins the Sanic range tested.
"""

from __future__ import annotations

from time import monotonic
from typing import Any

from sanic.http import Stage
from sanic.server.protocols.http_protocol import HttpProtocol

#: The Sanic versions this seam was checked against (core's pyproject pins the same).
TESTED_SANIC = ">=25.12,<25.13"


class SanicSeam(HttpProtocol):
    """Sanic's HTTP protocol, with what a protocol in front of it may ask of it."""

    __slots__ = ()

    def sanic_idle(self) -> bool:
        """Sanic has no request in progress, no body left to read and nothing buffered."""
        http = getattr(self, "_http", None)
        if http is None:  # before the connection task started
            return not getattr(self, "recv_buffer", b"")
        return http.stage is Stage.IDLE and not http.request_body and not self.recv_buffer

    def feed_sanic(self, data: bytes) -> None:
        """Hand bytes to Sanic's own parser, as if they had just arrived."""
        super().data_received(data)

    def mark_active(self) -> None:
        """Reset Sanic's idle clock: the connection is busy even though Sanic is not."""
        self._time = monotonic()

    async def wait_writable(self) -> None:
        """Wait while the transport has paused writing (flow control)."""
        if not self._can_write.is_set():
            await self._can_write.wait()

    @property
    def app_context(self) -> Any:
        return self.app.ctx


def limit_request_body(request: Any, limit: int) -> None:
    """Set the body limit of one request to a streaming route (Sanic lifts it to infinity).

    Sanic checks it as the body is read: a declared Content-Length over it is
    refused (413) by the first read, before any body byte is waited for.
    """
    request.stream.request_max_size = limit


def seconds_silent(request: Any) -> float:
    """Seconds since the connection of a streaming request last received (or sent) a byte."""
    return monotonic() - request.stream.protocol._time


def last_activity(protocol: Any) -> float:
    return float(protocol._time)


def restore_activity(protocol: Any, at: float) -> None:
    """Set the idle clock back to ``at`` (handing Sanic old bytes makes it look like new ones)."""
    protocol._time = at


def close_after_reply(request: Any) -> None:
    """Answer ``request`` with ``Connection: close``, and read none of its unread body first."""
    request.stream.keep_alive = False
    request.stream.request_body = None


def end_keep_alive(request: Any) -> None:
    """Answer ``request`` with ``Connection: close`` and close the connection after it."""
    if request.stream is not None:
        request.stream.keep_alive = False


def idle_secs(connection: Any) -> float:
    """How long a connection (Sanic's protocol or the lane's) has seen no activity."""
    return monotonic() - connection._time


def has_request_body(request: Any) -> bool:
    return bool(request.stream is not None and request.stream.request_body)
