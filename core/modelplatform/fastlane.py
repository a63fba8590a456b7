"""The fast lane: hot HTTP routes parsed in C and answered beside Sanic.

Sanic parses each request head in Python and builds a Request object with
its header multidict, router match, handler dispatch and response object:
about 55 us of CPU per request on the 2-core benchmark machine, more than
our whole inference path for a small model. A dialect may therefore
declare *fast routes* (``HttpDialect.fast_routes``) for its hot endpoints
(OIP ``.../infer``). On each connection, :class:`FastLaneProtocol` reads a
request head with httptools; when it is a plain keep-alive HTTP/1.1 request
for a fast route with a small, complete body, the route's handler answers
it directly. Everything else (other paths and methods, query strings or
percent-encoded paths, chunked or ``Expect`` bodies, bodies over
``FAST_BODY_LIMIT``, ``Connection: close``, HTTP/1.0, anything httptools
refuses) is handed, bytes unchanged, to Sanic on the same connection, so
its behaviour, limits and error shapes stay exactly Sanic's.

Ordering: the lane takes bytes only while Sanic has no request in progress
and nothing buffered, and hands Sanic nothing while a lane request is in
flight; responses therefore leave in request order, pipelined or not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from time import monotonic
from typing import Any

import httptools
import structlog
from sanic.http import Stage
from sanic.server.protocols.http_protocol import HttpProtocol

log = structlog.get_logger("modelplatform.http")

#: Larger bodies go to Sanic, whose infer routes read them into one buffer (zero copy).
FAST_BODY_LIMIT = 256 * 1024
#: A head longer than this without its blank line is Sanic's to refuse.
HEAD_LIMIT = 8 * 1024


@dataclass(frozen=True, slots=True)
class FastResponse:
    """A response the lane writes as is: status, body (bytes or parts), headers."""

    status: int
    body: bytes | Sequence[bytes | memoryview]
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_sanic(cls, response: Any) -> FastResponse:
        """A Sanic ``HTTPResponse`` (e.g. ``json_error``'s): one error shape for both paths."""
        return cls(response.status, bytes(response.body or b""), response.content_type or "")


#: ``handler(path_parameters, headers, body)``; header names are lower case.
FastHandler = Callable[[dict[str, str], Mapping[str, str], bytes], Awaitable[FastResponse]]


@dataclass(frozen=True, slots=True)
class FastRoute:
    """``POST /v2/models/{model}/versions/{version:int}/infer`` and its handler.

    ``{name}`` matches one non-empty path segment, ``{name:int}`` one made of
    digits only (passed on as a string without leading zeros).
    """

    method: str
    path: str
    handler: FastHandler


#: A compiled path: per segment (kind, text), see ``_compile``.
_Pattern = list[tuple[str, str]]


class FastRouter:
    """Matches a path against fast routes by segment; built once at start-up."""

    def __init__(self, routes: Sequence[FastRoute]) -> None:
        #: Request-line starts that may be fast ("POST "): anything else goes to Sanic unparsed.
        self.starts = tuple({route.method.upper().encode() + b" " for route in routes})
        self._by_shape: dict[tuple[bytes, int], list[tuple[_Pattern, FastHandler]]] = {}
        for route in routes:
            segments = route.path.split("/")
            key = (route.method.upper().encode(), len(segments))
            self._by_shape.setdefault(key, []).append((_compile(segments), route.handler))

    def __bool__(self) -> bool:
        return bool(self._by_shape)

    def match(self, method: bytes, path: str) -> tuple[FastHandler, dict[str, str]] | None:
        segments = path.split("/")
        for pattern, handler in self._by_shape.get((method, len(segments)), ()):
            parameters = _bind(pattern, segments)
            if parameters is not None:
                return handler, parameters
        return None


def _compile(segments: list[str]) -> list[tuple[str, str]]:
    """Each segment as (kind, text): ("", literal), ("str", name) or ("int", name)."""
    compiled = []
    for segment in segments:
        if segment.startswith("{") and segment.endswith("}"):
            name, _, kind = segment[1:-1].partition(":")
            compiled.append((kind or "str", name))
        else:
            compiled.append(("", segment))
    return compiled


def _bind(pattern: list[tuple[str, str]], segments: list[str]) -> dict[str, str] | None:
    parameters: dict[str, str] = {}
    for (kind, text), segment in zip(pattern, segments):
        if not kind:
            if segment != text:
                return None
        elif not segment or (kind == "int" and not segment.isdigit()):
            return None
        else:
            parameters[text] = str(int(segment)) if kind == "int" else segment
    return parameters


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
class _Request:
    handler: FastHandler
    parameters: dict[str, str]
    headers: dict[str, str]
    body: bytes
    path: str


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


def head_bytes(response: FastResponse, length: int) -> bytes:
    """The status line and headers of a keep-alive response with a Content-Length."""
    lines = [
        _STATUS_LINES.get(response.status) or _status_line(response.status),
        b"content-length: %d\r\nconnection: keep-alive\r\ncontent-type: " % length,
        response.content_type.encode("latin-1"),
        b"\r\n",
    ]
    for name, value in response.headers.items():
        lines.append(f"{name}: {value}\r\n".encode("latin-1"))
    lines.append(b"\r\n")
    return b"".join(lines)


class FastLaneProtocol(HttpProtocol):
    """Sanic's HTTP/1.1 protocol with the fast lane in front of it."""

    __slots__ = (
        "_router", "_on_error", "_body_limit",
        "_lane_buffer", "_lane_busy", "_lane_task", "_lane_wakeup",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        lane = self.app.ctx.fast_lane
        self._router: FastRouter = lane.router
        self._on_error: Callable[[str, Exception], FastResponse] = lane.on_error
        self._body_limit = min(FAST_BODY_LIMIT, self.app.config.REQUEST_MAX_SIZE)
        self._lane_buffer = bytearray()
        self._lane_busy = False
        self._lane_task: asyncio.Task[None] | None = None
        self._lane_wakeup: asyncio.Future[None] | None = None

    # ------------------------------------------------------------ asyncio callbacks

    def data_received(self, data: bytes) -> None:
        if not (self._lane_busy or self._lane_buffer or self._sanic_idle()):
            super().data_received(data)
            return
        self._time = monotonic()
        self._lane_buffer += data
        if self._lane_task is None:
            self._lane_task = self.loop.create_task(self._lane())
        elif self._lane_wakeup is not None and not self._lane_wakeup.done():
            self._lane_wakeup.set_result(None)
        if len(self._lane_buffer) > self._body_limit + HEAD_LIMIT and self.transport:
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
            self._time = monotonic()
        super().check_timeouts()

    # ------------------------------------------------------------ the lane

    def _sanic_idle(self) -> bool:
        """Sanic has no request in progress, no body left to read and nothing buffered."""
        http = getattr(self, "_http", None)
        if http is None:
            return not getattr(self, "recv_buffer", b"")
        return http.stage is Stage.IDLE and not http.request_body and not self.recv_buffer

    async def _lane(self) -> None:
        """One loop per connection: take the next request, answer it, repeat."""
        while True:
            request = self._take()
            if isinstance(request, _Request):
                self._lane_busy = True
                try:
                    await self._answer(request)
                finally:
                    self._lane_busy = False
            elif request is _SANIC:
                self._hand_to_sanic()
            if self.transport is not None:
                self.transport.resume_reading()
            if not isinstance(request, _Request):  # wait for the next bytes that are ours
                self._lane_wakeup = self.loop.create_future()
                await self._lane_wakeup

    def _take(self) -> _Request | object:
        buffer = self._lane_buffer
        if not buffer:
            return _WAIT
        if not buffer.startswith(self._router.starts):
            return _WAIT if _may_become(buffer, self._router.starts) else _SANIC
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
    ) -> _Request | object:
        headers = head.headers
        if (
            not head.complete
            or parser.get_http_version() != "1.1"
            or not parser.should_keep_alive()
            or b"?" in head.url
            or b"%" in head.url
            or head.repeated
            or "transfer-encoding" in headers
            or "expect" in headers
            or "upgrade" in headers
        ):
            return _SANIC
        length = headers.get("content-length", "0")
        if not length.isdigit() or int(length) > self._body_limit:
            return _SANIC
        matched = self._router.match(parser.get_method(), head.url.decode("latin-1"))
        if matched is None:
            return _SANIC
        body_end = body_start + int(length)
        if len(buffer) < body_end:
            return _WAIT
        body = bytes(buffer[body_start:body_end])
        del buffer[:body_end]
        handler, parameters = matched
        return _Request(handler, parameters, headers, body, head.url.decode("latin-1"))

    def _hand_to_sanic(self) -> None:
        data = bytes(self._lane_buffer)
        self._lane_buffer.clear()
        super().data_received(data)

    async def _answer(self, request: _Request) -> None:
        try:
            response = await request.handler(request.parameters, request.headers, request.body)
        except Exception as error:  # noqa: BLE001 - rendered as Sanic's handler would
            response = self._on_error(request.path, error)
        await self._write(response)

    async def _write(self, response: FastResponse) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if not self._can_write.is_set():
            await self._can_write.wait()
        body = response.body
        if isinstance(body, (bytes, bytearray)):
            transport.write(head_bytes(response, len(body)) + body)
        else:
            parts = list(body)
            transport.writelines([head_bytes(response, sum(len(p) for p in parts)), *parts])
        self._time = monotonic()
