"""``GET``/``POST /v2[/models/{model}]/trace/setting``: Triton's trace extension over HTTP.

A POST body is a JSON object of Triton's fields; a value is a string, a list
of strings (``trace_level``) or null (back to the fallback). Numbers are
taken too. Errors are Triton's ``{"error": ...}`` with oip-rest's statuses.
"""

from __future__ import annotations

from typing import Any

import orjson

from modelplatform import HttpReply, HttpRequest, HttpRoute, InvalidArgument, RouteDoc, ServerContext

from .settings import TraceSettings
from .tracing import tracing_of
from .validity import check_model

DIALECT = "oip-trace"
GLOBAL = "/v2/trace/setting"
MODEL = "/v2/models/{model}/trace/setting"
#: A settings document is a handful of fields; anything larger is not one.
MAX_BODY_BYTES = 16 * 1024


class TraceRoutes:
    def __init__(self, context: ServerContext) -> None:
        self.context = context
        self.tracing = tracing_of(context)
        self.settings: TraceSettings = self.tracing.settings

    async def get(self, request: HttpRequest) -> HttpReply:
        model = self._model(request)
        return HttpReply(200, orjson.dumps(self.settings.answer(model)))

    async def post(self, request: HttpRequest) -> HttpReply:
        model = self._model(request)
        changes = _changes(request.body)
        return HttpReply(200, orjson.dumps(await self.tracing.change(model, changes)))

    def _model(self, request: HttpRequest) -> str:
        model = request.params.get("model", "")
        check_model(self.context, model)
        return model


def _changes(body: bytes | bytearray) -> dict[str, list[str] | None]:
    if not body:
        return {}
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise InvalidArgument(f"failed to parse the trace settings: {error}") from None
    if not isinstance(document, dict):
        raise InvalidArgument("trace settings must be a JSON object")
    return {name: _values(name, value) for name, value in document.items()}


def _values(name: str, value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    if isinstance(value, str):
        return [value]
    if isinstance(value, int) and not isinstance(value, bool):
        return [str(value)]
    raise InvalidArgument(f"trace setting '{name[:64]}' must be a string, a list of strings or null")


#: Triton's trace settings: each a string, a list of strings (trace_level) or null.
SETTINGS = {"type": "object", "description": "trace_level, trace_rate, trace_count, log_frequency, ..."}
_READ = RouteDoc(summary="The trace settings", responses={200: SETTINGS})
_CHANGE = RouteDoc(summary="Change the trace settings (null: back to the fallback)", request=SETTINGS,
                   responses={200: SETTINGS})  # fmt: skip


def trace_routes(context: ServerContext) -> list[HttpRoute]:
    routes = TraceRoutes(context)
    return [
        HttpRoute(("GET",), path, routes.get, max_body_bytes=0, category="trace", doc=_READ)
        for path in (GLOBAL, MODEL)
    ] + [
        HttpRoute(("POST",), path, routes.post, max_body_bytes=MAX_BODY_BYTES, category="trace", doc=_CHANGE)
        for path in (GLOBAL, MODEL)
    ]
