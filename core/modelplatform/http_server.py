"""The Sanic app: one HTTP port, one blueprint per dialect.

Each dialect renders its own errors through blueprint-scoped handlers; the
handlers here cover what no dialect matched (404/405 as Triton answers them)
and a body over ``max_request_bytes``, refused from its Content-Length
before it is read.

A route added with ``ctx_body_buffer=True`` (Sanic route context) receives a
large body as one buffer of its Content-Length, filled as it arrives, instead
of Sanic's list of 64 KiB chunks joined at the end (which holds the body
twice): binary dialects then hand the model numpy views over that buffer.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import orjson
import structlog
from sanic import Blueprint, HTTPResponse, Request, Sanic
from sanic.exceptions import BadRequest, MethodNotAllowed, NotFound, PayloadTooLarge, SanicException

from .fastlane import FastResponse, FastRoute, FastRouter

if TYPE_CHECKING:
    from .server import ServerContext

log = structlog.get_logger("modelplatform.http")
_app_numbers = itertools.count()


@dataclass(frozen=True, slots=True)
class HttpDialect:
    """A protocol served over HTTP: a unique name and a blueprint factory.

    ``blueprint`` is called once at start-up with the ServerContext and
    returns the Sanic Blueprint to mount. ``extensions`` are the server
    metadata extension names this dialect implements. A dialect that owns a
    ``path_prefix`` may give ``render_error(message, status)``: errors raised
    before any of its routes runs (unknown path 404, wrong method 405, body
    over the limit 413) under that prefix are then rendered in its own shape
    instead of ``{"error": ...}``.
    """

    name: str
    blueprint: Callable[[ServerContext], Blueprint]
    extensions: tuple[str, ...] = ()
    path_prefix: str = ""
    render_error: Callable[[str, int], HTTPResponse] | None = None
    #: Hot routes answered by the fast lane (see modelplatform.fastlane); each must
    #: behave exactly as the blueprint's route for the same path, which still
    #: serves every request the lane passes on.
    fast_routes: Callable[[ServerContext], Sequence[FastRoute]] | None = None


def json_error(message: str, status: int) -> HTTPResponse:
    """Triton's error body: ``{"error": "..."}`` as application/json."""
    return HTTPResponse(
        orjson.dumps({"error": message}), status=status, content_type="application/json"
    )


#: Bodies smaller than this are joined as Sanic does (one chunk: nothing to save).
BUFFER_FROM_BYTES = 256 * 1024


class BufferedRequest(Request):
    """Sanic's request, reading large bodies of opted-in routes into one buffer."""

    async def receive_body(self) -> None:
        length = self.headers.get("content-length", "")
        route = self.route
        if (
            self.body
            or route is None
            or not getattr(route.ctx, "body_buffer", False)
            or not length.isdigit()
            or int(length) < BUFFER_FROM_BYTES
        ):
            return await super().receive_body()
        self.body = await _read_into(self.stream, int(length))  # type: ignore[assignment]


async def _read_into(stream: Any, length: int) -> bytearray:
    first = await stream.read()  # refuses a length over the limit before any buffer exists
    buffer = bytearray(length)
    view, offset, chunk = memoryview(buffer), 0, first
    while chunk is not None:
        end = offset + len(chunk)
        if end > length:  # Sanic frames by Content-Length; this is a guard, not a path
            raise BadRequest("request body longer than its Content-Length")
        view[offset:end] = chunk
        offset, chunk = end, await stream.read()
    if offset != length:
        raise BadRequest("request body shorter than its Content-Length")
    return buffer


def create_app(context: ServerContext) -> Sanic:
    number = next(_app_numbers)
    app = Sanic(f"modelplatform_{number}", configure_logging=False, request_class=BufferedRequest)
    # Sanic's TouchUp rewrites its protocol classes process-wide and cannot run
    # twice; a second app in one process (tests) keeps the first app's rewrite.
    app.config.TOUCHUP = number == 0
    app.config.REQUEST_MAX_SIZE = context.settings.max_request_bytes
    app.config.KEEP_ALIVE_TIMEOUT = 75
    app.config.NOISY_EXCEPTIONS = False
    app.config.ACCESS_LOG = False
    app.config.FALLBACK_ERROR_FORMAT = "json"
    for dialect in context.dialects.values():
        app.blueprint(dialect.blueprint(context))
    errors = FrameworkErrors(context.dialects.values())
    app.error_handler.add(NotFound, errors.not_found)
    app.error_handler.add(MethodNotAllowed, errors.method_not_allowed)
    app.error_handler.add(PayloadTooLarge, errors.too_large)
    app.error_handler.add(SanicException, errors.sanic_error)
    app.error_handler.add(Exception, errors.internal)
    routes = [r for d in context.dialects.values() if d.fast_routes for r in d.fast_routes(context)]
    app.ctx.fast_lane = SimpleNamespace(router=FastRouter(routes), on_error=errors.fast_internal)
    return app


class FrameworkErrors:
    """Errors no dialect handler saw, rendered in the shape of the path's owner.

    Triton's ``{"error": ...}`` everywhere, except under the path prefix of a
    dialect that renders its own errors (grps answers with its ``status``).
    """

    def __init__(self, dialects: Iterable[HttpDialect]) -> None:
        owners = [(d.path_prefix, d.render_error) for d in dialects if d.path_prefix and d.render_error]
        self._owners = sorted(owners, key=lambda owner: -len(owner[0]))

    def render(self, request: Request, message: str, status: int) -> HTTPResponse:
        return self._render(request.path, message, status)

    def _render(self, path: str, message: str, status: int) -> HTTPResponse:
        for prefix, render in self._owners:
            if path.startswith(prefix):
                return render(message, status)  # type: ignore[misc]
        return json_error(message, status)

    def not_found(self, request: Request, exception: Exception) -> HTTPResponse:
        return self.render(request, "Not Found", 404)

    def method_not_allowed(self, request: Request, exception: Exception) -> HTTPResponse:
        return self.render(request, "Method Not Allowed", 405)

    def too_large(self, request: Request, exception: Exception) -> HTTPResponse:
        return self.render(request, f"request body is larger than the limit: {exception}", 413)

    def sanic_error(self, request: Request, exception: SanicException) -> HTTPResponse:
        return self.render(request, str(exception) or "bad request", exception.status_code)

    def internal(self, request: Request, exception: Exception) -> HTTPResponse:
        return self._internal(request.path, exception)

    def fast_internal(self, path: str, exception: Exception) -> FastResponse:
        """:meth:`internal` for the fast lane, which has no Sanic request."""
        return FastResponse.from_sanic(self._internal(path, exception))

    def _internal(self, path: str, exception: Exception) -> HTTPResponse:
        log.error("request_failed", path=path, error=type(exception).__name__)
        return self._render(path, f"internal error: {type(exception).__name__}", 500)
