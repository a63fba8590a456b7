"""The fast lane: hot HTTP routes parsed in C and answered beside Sanic.

Sanic parses each request head in Python and builds a Request object with
its header multidict, router match, handler dispatch and response object:
about 55 us of CPU per request on the 2-core benchmark machine, more than
our whole inference path for a small model. On each connection,
:class:`FastLaneProtocol` therefore reads a request head with httptools;
when it is a plain keep-alive HTTP/1.1 request for a route declared ``hot``
with a small, complete body, the route's own handler answers it directly,
through the same steps as the Sanic path (dispatch.py: match, admit, time,
call, render a failure).
Everything else (other routes, query strings or percent-encoded paths,
chunked or ``Expect`` bodies, bodies over ``FAST_BODY_LIMIT``,
``Connection: close``, HTTP/1.0, anything httptools refuses) is handed,
bytes unchanged, to Sanic on the same connection, so its behaviour, limits
and error shapes stay exactly Sanic's.

Ordering: the lane takes bytes only while Sanic has no request in progress
and nothing buffered, and hands Sanic nothing while a lane request is in
flight; responses therefore leave in request order, pipelined or not.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

import httptools
import structlog

from modelplatform.dataplane.declarations import HttpReply, HttpRequest
from modelplatform.dataplane.draining import Drain
from modelplatform.frontends.http.admission import admitted
from modelplatform.frontends.http.dispatch import HttpDispatch
from modelplatform.frontends.http.replies import close_stream
from modelplatform.frontends.http.routing import Match
from modelplatform.frontends.http.sanic_seam import SanicSeam, last_activity, restore_activity

log = structlog.get_logger("modelplatform.frontends.http")

#: Larger bodies go to Sanic, which reads them into one buffer (zero copy).
FAST_BODY_LIMIT = 256 * 1024
#: A head longer than this without its blank line is Sanic's to refuse.
HEAD_LIMIT = 8 * 1024


@dataclass(slots=True)
class _Head:
    """What the httptools callbacks collect from one request head."""

    url: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    complete: bool = False
    repeated: bool = False  # a header came twice: Sanic decides what that means

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.decode("latin-1").lower()
        self.repeated = self.repeated or key in self.headers
        self.headers[key] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.complete = True


@dataclass(frozen=True, slots=True)
class LaneRoutes:
    """What every connection's lane reads, built once per server.

    ``starts`` are the request-line starts that may be hot (``b"POST "``):
    anything else goes to Sanic unparsed.
    """

    #: The steps every HTTP path takes (the same object the Sanic path asks).
    dispatch: HttpDispatch
    body_limit: int
    starts: tuple[bytes, ...]

    @classmethod
    def of(cls, dispatch: HttpDispatch) -> LaneRoutes:
        methods = sorted({m for route in dispatch.router.routes() if route.hot for m in route.methods})
        if methods and dispatch.cors is not None:
            methods.append("OPTIONS")  # preflights of the hot routes are answered here too
        starts = tuple(method.encode() + b" " for method in methods)
        return cls(dispatch, min(FAST_BODY_LIMIT, dispatch.max_request_bytes), starts)

    def limit(self, match: Match) -> int:
        route_limit = match.route.max_body_bytes
        return self.body_limit if route_limit is None else min(route_limit, self.body_limit)


@dataclass(frozen=True, slots=True)
class _Request:
    match: Match
    request: HttpRequest


@dataclass(frozen=True, slots=True)
class _Answered:
    """A request answered without a route: a CORS preflight."""

    reply: HttpReply


def _may_become(buffer: bytearray, starts: tuple[bytes, ...]) -> bool:
    """Whether more bytes could still make ``buffer`` start like a fast request."""
    return any(start.startswith(buffer) for start in starts)


_WAIT = object()  # the head or body is not all here yet
_SANIC = object()  # not a fast request: Sanic's from here on


def _status_line(status: int) -> bytes:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Unknown"
    return f"HTTP/1.1 {status} {phrase}\r\n".encode()


_STATUS_LINES = {status.value: _status_line(status.value) for status in HTTPStatus}
_STRIPPED = str.maketrans("", "", "\r\n\x00")


def _header_line(name: str, value: str) -> bytes:
    # Sanic strips CR, LF and NUL from header text; none of them is printable.
    line = f"{name}: {value}"
    return (line if line.isprintable() else line.translate(_STRIPPED)).encode(
        errors="surrogateescape"
    ) + b"\r\n"


#: (status, content type) -> the reply head up to its own headers: built once, not per reply.
#: Process-wide on purpose: a pure function of its key, the same for every server.
_HEAD_STARTS: dict[tuple[int, str, bool], bytes] = {}


def head_bytes(reply: HttpReply, framing: bytes, keep_alive: bool = True) -> bytes:
    """Status line and headers of a reply; ``framing`` is its length header.

    ``keep_alive`` false (the shutdown drain) says ``Connection: close``.
    """
    key = (reply.status, reply.content_type, keep_alive)
    start = _HEAD_STARTS.get(key)
    if start is None:
        status_line = _STATUS_LINES.get(reply.status) or _status_line(reply.status)
        connection = b"connection: keep-alive\r\n" if keep_alive else b"connection: close\r\n"
        start = status_line + connection + _header_line("content-type", reply.content_type)
        if len(_HEAD_STARTS) < 256:  # content types come from handlers, but bound it anyway
            _HEAD_STARTS[key] = start
    lines = [start, framing]
    lines += [_header_line(name, value) for name, value in reply.headers.items()]
    lines.append(b"\r\n")
    return b"".join(lines)


class FastLaneProtocol(SanicSeam):
    """Sanic's HTTP/1.1 protocol with the fast lane in front of it."""

    __slots__ = ("_routes", "_drain", "_lane_buffer", "_lane_busy", "_lane_task", "_lane_wakeup")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._routes: LaneRoutes = self.app_context.lane_routes
        self._drain: Drain = self.app_context.drain
        self._lane_buffer = bytearray()
        self._lane_busy = False
        self._lane_task: asyncio.Task[None] | None = None
        self._lane_wakeup: asyncio.Future[None] | None = None

    # ------------------------------------------------------------ asyncio callbacks

    def data_received(self, data: bytes) -> None:
        if not (self._lane_busy or self._lane_buffer or self.sanic_idle()):
            self.feed_sanic(data)
            return
        self.mark_active()
        self._lane_buffer += data
        if self._lane_task is None:
            self._lane_task = self.loop.create_task(self._lane())
        elif self._lane_wakeup is not None and not self._lane_wakeup.done():
            self._lane_wakeup.set_result(None)
        if len(self._lane_buffer) > self._routes.body_limit + HEAD_LIMIT and self.transport:
            self.transport.pause_reading()  # a client far ahead of its answers waits

    def connection_lost(self, exc: Exception | None) -> None:
        if self._lane_task is not None:
            self._lane_task.cancel()
        super().connection_lost(exc)

    def close_if_idle(self) -> bool:
        if self._lane_busy:  # shutdown waits for the answer in flight, as for Sanic's own
            return False
        return bool(super().close_if_idle())

    def check_timeouts(self) -> None:
        if self._lane_busy:  # Sanic sees an idle connection; it is not
            self.mark_active()
        super().check_timeouts()

    # ------------------------------------------------------------ the lane

    async def _lane(self) -> None:
        """One loop per connection: take the next request, answer it, repeat."""
        while True:
            request = self._take()
            if isinstance(request, (_Request, _Answered)):
                self._lane_busy = True
                try:
                    await (
                        self._answer(request) if isinstance(request, _Request) else self._reply(request.reply)
                    )
                finally:
                    self._lane_busy = False
            elif request is _SANIC:
                self._hand_to_sanic()
            if self.transport is not None:
                self.transport.resume_reading()
            if not isinstance(request, (_Request, _Answered)):  # wait for the next bytes that are ours
                self._lane_wakeup = self.loop.create_future()
                await self._wait_for_bytes()

    async def _wait_for_bytes(self) -> None:
        """Wait for the lane's next bytes; a request left unfinished too long goes to Sanic.

        Sanic then answers it as it answers any stalled request (408, dialect's
        shape, connection closed): the idle clock it is handed still runs from
        the last byte, so the client gets no second grace period.
        """
        assert self._lane_wakeup is not None
        limit = self._routes.dispatch.timeouts.request_s
        if limit is None or not self._lane_buffer:  # an idle keep-alive connection is Sanic's to time
            await self._lane_wakeup
            return
        try:
            await asyncio.wait_for(self._lane_wakeup, limit)
        except TimeoutError:
            silent_since = last_activity(self)
            self._hand_to_sanic()
            restore_activity(self, silent_since)

    def _take(self) -> _Request | _Answered | object:
        buffer, starts = self._lane_buffer, self._routes.starts
        if not buffer:
            return _WAIT
        if not buffer.startswith(starts):
            return _WAIT if _may_become(buffer, starts) else _SANIC
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            return _WAIT if len(buffer) < HEAD_LIMIT else _SANIC
        head = _Head()
        parser = httptools.HttpRequestParser(head)
        try:
            parser.feed_data(bytes(buffer[: end + 4]))
        except (httptools.HttpParserError, httptools.HttpParserUpgrade):
            return _SANIC
        return self._request(buffer, end + 4, head, parser)

    def _request(
        self, buffer: bytearray, body_start: int, head: _Head, parser: Any
    ) -> _Request | _Answered | object:
        headers = head.headers
        if (
            not head.complete
            or not buffer.startswith(b" HTTP/1.1\r\n", buffer.find(b"\r\n") - 9)
            # httptools forgets keep-alive once a body-less message is complete: ask the header
            or "close" in headers.get("connection", "").lower()
            or b"?" in head.url
            or b"%" in head.url
            or head.repeated
            or "transfer-encoding" in headers
            or "expect" in headers
            or "upgrade" in headers
        ):
            return _SANIC
        length = headers.get("content-length", "0")
        method, path = parser.get_method().decode("latin-1"), head.url.decode("latin-1")
        if method == "OPTIONS":
            return self._preflight(buffer, body_start, path, headers, length)
        match = self._routes.dispatch.match(method, path)
        if (
            match is None
            or not match.route.hot
            or not length.isdigit()
            or int(length) > self._routes.limit(match)
        ):
            return _SANIC
        body_end = body_start + int(length)
        if len(buffer) < body_end:
            return _WAIT
        body = bytes(buffer[body_start:body_end])
        del buffer[:body_end]
        return _Request(match, HttpRequest(method, path, match.params, headers, body))

    def _preflight(
        self, buffer: bytearray, body_start: int, path: str, headers: dict[str, str], length: str
    ) -> _Answered | object:
        """A CORS preflight without a body, answered here; anything else OPTIONS is Sanic's."""
        cors = self._routes.dispatch.cors
        reply = None if cors is None or length != "0" else cors.preflight("OPTIONS", path, headers)
        if reply is None:
            return _SANIC
        del buffer[:body_start]
        return _Answered(reply)

    def _hand_to_sanic(self) -> None:
        data = bytes(self._lane_buffer)
        self._lane_buffer.clear()
        self.feed_sanic(data)

    async def _answer(self, taken: _Request) -> None:
        match, request = taken.match, taken.request
        dispatch = self._routes.dispatch
        refusal, verdict = dispatch.admit(match, request.headers)
        # The write too runs admitted: a streamed body calls the model as it is written.
        with admitted(verdict):
            reply = refusal if refusal is not None else await dispatch.answer(match, request)
            if dispatch.cors is not None:
                reply = dispatch.cors.answered(reply, request.headers)
            await self._reply(reply)

    async def _reply(self, reply: HttpReply) -> None:
        keep_alive = not self._drain.closing
        await self._write(reply, keep_alive)
        if not keep_alive:
            self.close()  # after what is written has left

    async def _write(self, reply: HttpReply, keep_alive: bool) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        await self.wait_writable()
        body = reply.body
        if isinstance(body, (bytes, bytearray)):
            transport.write(head_bytes(reply, b"content-length: %d\r\n" % len(body), keep_alive) + body)
        elif reply.streamed:
            await self._write_chunked(reply, body, keep_alive)  # type: ignore[arg-type]  # reply.streamed: an async iterator
        else:
            parts = list(body)  # type: ignore[arg-type]  # neither buffer nor stream: parts
            length = sum(len(part) for part in parts)
            transport.writelines([head_bytes(reply, b"content-length: %d\r\n" % length, keep_alive), *parts])
        self.mark_active()

    async def _write_chunked(self, reply: HttpReply, chunks: AsyncIterator[bytes], keep_alive: bool) -> None:
        """A streamed reply in chunked encoding; a failing stream closes the connection."""
        transport = self.transport
        assert transport is not None
        transport.write(head_bytes(reply, b"transfer-encoding: chunked\r\n", keep_alive))
        try:
            async for chunk in chunks:
                if chunk:
                    await self.wait_writable()
                    transport.writelines([b"%x\r\n" % len(chunk), chunk, b"\r\n"])
                self.mark_active()
        except Exception as error:  # noqa: BLE001 - the status is gone; only closing says it failed
            log.error("reply_stream_failed", error=type(error).__name__)
            transport.close()
            return
        finally:
            await close_stream(chunks)
        transport.write(b"0\r\n\r\n")
