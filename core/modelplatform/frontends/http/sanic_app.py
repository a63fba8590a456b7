"""The Sanic app: every declared route of every dialect, served from its declaration.

Sanic sees one catch-all streaming route; the body is read as the route's
policy says, and the steps every HTTP path takes (match, admit, time, call,
render a failure: dispatch.py, the same as on the fast lane) turn the neutral
HttpRequest into the HttpReply written back. Sanic still parses HTTP, enforces limits and keeps connections.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from sanic import HTTPResponse, Request, Sanic
from sanic.exceptions import PayloadTooLarge, RequestTimeout, SanicException

from modelplatform.dataplane.declarations import BodyPolicy, HttpReply, HttpRequest
from modelplatform.frontends.http.admission import admitted
from modelplatform.frontends.http.dispatch import HttpDispatch, protocol_of
from modelplatform.frontends.http.encoding import body_limit
from modelplatform.frontends.http.fastlane import LaneRoutes
from modelplatform.frontends.http.replies import send_reply
from modelplatform.frontends.http.routing import Match
from modelplatform.frontends.http.sanic_seam import (
    close_after_reply,
    end_keep_alive,
    has_request_body,
    limit_request_body,
    seconds_silent,
)
from modelplatform.frontends.http.timeouts import NO_LIMIT_S, HttpTimeouts

if TYPE_CHECKING:
    from modelplatform.dataplane.context import ServerContext
    from modelplatform.dataplane.draining import Drain
    from modelplatform.dataplane.inference import Inference

_app_numbers = itertools.count()
_METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]


def create_app(context: ServerContext) -> Sanic[Any, Any]:
    number = next(_app_numbers)
    app = Sanic(f"modelplatform_{number}", configure_logging=False)
    # Sanic's TouchUp rewrites its protocol classes process-wide and cannot run
    # twice; a second app in one process (tests) keeps the first app's rewrite.
    app.config.TOUCHUP = number == 0
    app.config.REQUEST_MAX_SIZE = context.settings.max_request_bytes
    timeouts = HttpTimeouts.of(context.settings)
    # Sanic times out a request's head; its body and the answer are timed by
    # HttpDispatch.answer (dispatch.py, with http/timeouts.py), as on the fast lane.
    # Sanic annotates these int; it only sleeps on and compares them, so float seconds work.
    app.config.REQUEST_TIMEOUT = timeouts.request_s or NO_LIMIT_S  # type: ignore[assignment]  # Sanic: int
    app.config.RESPONSE_TIMEOUT = NO_LIMIT_S  # type: ignore[assignment]  # Sanic: int
    app.config.KEEP_ALIVE_TIMEOUT = timeouts.keep_alive_s  # type: ignore[assignment]  # Sanic: int
    app.config.NOISY_EXCEPTIONS = False
    app.config.ACCESS_LOG = False
    app.config.FALLBACK_ERROR_FORMAT = "json"
    dispatch = HttpDispatch.of(context)
    dispatcher = Dispatcher(dispatch, context.dataplane.health.drain, context.dataplane.inference)

    async def every_route(request: Request, path: str = "") -> HTTPResponse | None:
        return await dispatcher.dispatch(request)

    # Sanic sees one streaming catch-all; the core's router picks the declared route.
    app.add_route(every_route, "/", methods=_METHODS, stream=True, name="root")
    app.add_route(every_route, "/<path:path>", methods=_METHODS, stream=True, name="routes")
    app.error_handler.add(SanicException, dispatcher.framework_error)
    app.error_handler.add(Exception, dispatcher.framework_error)
    app.ctx.lane_routes = LaneRoutes.of(dispatch)
    app.ctx.drain = context.dataplane.health.drain  # the lane asks it whether to keep connections
    return app


class Dispatcher:
    """The Sanic path: reads the body as the route's policy says, then takes the steps of
    :class:`HttpDispatch` as the fast lane does; Sanic's own errors are answered here."""

    def __init__(self, http: HttpDispatch, drain: Drain, inference: Inference) -> None:
        self.http = http
        #: Once the shutdown drain closes connections, every answer says ``Connection: close``.
        self.drain = drain
        #: Counts inference requests refused before their route's handler ran (413, 408, 400).
        self.inference = inference

    async def dispatch(self, request: Request) -> HTTPResponse | None:
        http = self.http
        if http.cors is not None:
            preflight = http.cors.preflight(request.method, request.path, request.headers)
            if preflight is not None:
                return await send_reply(request, preflight)
        match = http.match(request.method, request.path)
        if match is None:
            return await self._send(request, http.miss(request.method, request.path))
        refusal, verdict = http.admit(match, request.headers)
        if refusal is not None:
            return await self._send(request, refusal)
        with admitted(verdict):
            reply = await self._answer(request, match)
            if self.drain.closing:
                end_keep_alive(request)
            return await self._send(request, reply)

    async def _send(self, request: Request, reply: HttpReply) -> HTTPResponse | None:
        """``reply``, with the CORS headers its origin gets when CORS is on."""
        cors = self.http.cors
        return await send_reply(request, reply if cors is None else cors.answered(reply, request.headers))

    async def _answer(self, request: Request, match: Match) -> HttpReply:
        http = self.http

        def refused(error: Exception) -> HttpReply | None:
            return self._sanic_error(request, match, error)

        try:
            neutral = await _neutral(request, match, http.max_request_bytes, http.timeouts)
        except Exception as error:  # noqa: BLE001 - rendered in the dialect's shape
            reply = refused(error)
            return reply if reply is not None else http.failure(match, error, request.path)
        return await http.answer(match, neutral, refused)

    def _sanic_error(self, request: Request, match: Match, error: Exception) -> HttpReply | None:
        """A body Sanic refused to read (limit, stalled client, framing) in the dialect's shape,
        counted as a refusal; None for any other error."""
        if isinstance(error, RequestTimeout):  # the client stalled its body: answer, then hang up
            close_after_reply(request)
            reply = match.dialect.render_error(str(error), error.status_code)
        elif isinstance(error, PayloadTooLarge):
            reply = match.dialect.render_error(_too_large(error), 413)
        elif isinstance(error, SanicException):
            reply = match.dialect.render_error(str(error) or "bad request", error.status_code)
        else:
            return None
        self.count_refused(match)
        return reply

    def count_refused(self, match: Match | None) -> None:
        """An inference request refused before its handler ran (no scope is set yet)."""
        if match is None or match.route.model_param is None:
            return
        param = match.route.model_param
        self.inference.count_refused(match.params.get(param, "") if param else "", protocol_of(match.dialect))

    async def framework_error(self, request: Request, error: Exception) -> HTTPResponse:
        """Errors Sanic raises before dispatch (a malformed head, a head over the limit)."""
        if isinstance(error, (PayloadTooLarge, RequestTimeout)):
            self.count_refused(self.http.match(request.method, request.path))
        if isinstance(error, PayloadTooLarge):
            reply = self.http.owners.render(request.path, _too_large(error), 413)
        elif isinstance(error, SanicException):
            reply = self.http.owners.render(request.path, str(error) or "bad request", error.status_code)
        else:
            reply = self.http.owners.render(request.path, f"internal error: {type(error).__name__}", 500)
        response = await self._send(request, reply)
        assert response is not None  # error replies are one buffer
        return response


def _too_large(error: Exception) -> str:
    return f"request body is larger than the limit: {error}"


async def _neutral(
    request: Request, match: Match, max_request_bytes: int, timeouts: HttpTimeouts
) -> HttpRequest:
    route = match.route
    body: Any = b""
    chunks = None
    if has_request_body(request):
        limit_request_body(request, body_limit(route, max_request_bytes))
        stream = _TimedStream(request, timeouts.request_s)
        if route.body is BodyPolicy.STREAMED:
            chunks = _rest(stream)
        else:
            body = await _read_body(request, stream)
    return HttpRequest(request.method, request.path, match.params, request.headers, body,
                       request.query_string, chunks)  # fmt: skip


class _TimedStream:
    """A request's body stream whose reads fail once the client was silent too long (408)."""

    __slots__ = ("_request", "_limit_s")

    def __init__(self, request: Request, limit_s: float | None) -> None:
        self._request, self._limit_s = request, limit_s

    async def read(self) -> bytes | None:
        stream = self._request.stream
        if self._limit_s is None:
            return await stream.read()  # type: ignore[union-attr]  # a request with a body has a stream
        # Measured from the last byte, not from this call: bytes the fast lane held count.
        left = self._limit_s - seconds_silent(self._request)
        try:
            async with asyncio.timeout(max(0.0, left)):
                return await stream.read()  # type: ignore[union-attr]  # a request with a body has a stream
        except TimeoutError:
            raise RequestTimeout("Request Timeout") from None


async def _read_body(request: Request, stream: _TimedStream) -> bytes | bytearray:
    """The whole body in one buffer: the first chunk when it is all, else one bytearray.

    Never a join of chunks (which holds the body twice): a declared length
    gets a buffer of that size, filled as it arrives; the first read refuses
    a length over the limit before any buffer exists.
    """
    first = await stream.read()
    length = request.headers.get("content-length", "")
    if first is None:
        return b""
    if not length.isdigit():  # chunked: Sanic bounds the total as it reads
        return b"".join([first, *[chunk async for chunk in _rest(stream)]])
    if len(first) == int(length):
        # Sanic counts a body consumed only once a read returns None (at once, here); else
        # it logs "body not consumed" at ERROR after every 2xx answer.
        await stream.read()
        return first
    return await _fill(bytearray(int(length)), first, stream)


async def _fill(buffer: bytearray, first: bytes, stream: Any) -> bytearray:
    view, offset, chunk = memoryview(buffer), 0, first
    while chunk is not None:
        end = offset + len(chunk)
        if end > len(buffer):  # Sanic frames by Content-Length; this is a guard, not a path
            raise SanicException("request body longer than its Content-Length", status_code=400)
        view[offset:end] = chunk
        offset, chunk = end, await stream.read()
    if offset != len(buffer):
        raise SanicException("request body shorter than its Content-Length", status_code=400)
    return buffer


async def _rest(stream: Any) -> AsyncIterator[bytes]:
    while (chunk := await stream.read()) is not None:
        yield chunk
