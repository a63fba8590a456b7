"""The ``/grps/v1`` routes and the monitor page on the shared HTTP port.

HTTP status equals ``status.code`` (as grps's Python server); every JSON
answer carries ``status``. Everything is resolved here, at start-up.
"""

from __future__ import annotations

from importlib import resources

import orjson
from sanic import Blueprint, HTTPResponse, Request, Sanic
from sanic_routing.exceptions import RouteExists

from modelplatform import InvalidArgument, ModelPlatformError, PluginError, ServerContext

from ..converter import Payload, single_bytes_of, to_message, to_ndarray
from ..metadata import model_yaml, server_yaml
from ..runtime import GrpsRuntime, runtime
from ..status import failure, from_error, success
from .custom import add_custom_routes, check_no_shadowing, declared_routes
from .json_io import JSON, dump_message, load_object, parse_predict
from .streaming import stream_http, wants_streaming

DIALECT = "grps-rest"
PREFIX = "/grps/v1"
OCTET = "application/octet-stream"
BUILT_IN = (
    "/",
    f"{PREFIX}/infer/predict",
    *(f"{PREFIX}/health/{kind}" for kind in ("online", "offline", "live", "ready")),
    f"{PREFIX}/metadata/server",
    f"{PREFIX}/metadata/model",
    f"{PREFIX}/monitor/series",
    f"{PREFIX}/monitor/metrics",
)


def _json(body: bytes, status: int = 200) -> HTTPResponse:
    return HTTPResponse(body, status=status, content_type=JSON)


def _reply(message) -> HTTPResponse:  # type: ignore[no-untyped-def]
    return _json(dump_message(message), message.status.code or 200)


class GrpsRoutes:
    def __init__(self, context: ServerContext, rt: GrpsRuntime) -> None:
        self.context = context
        self.rt = rt
        self.dashboard = resources.files("modelplatform_grps").joinpath("static/monitor.html").read_bytes()

    # ---- health ----

    async def online(self, request: Request) -> HTTPResponse:
        self.rt.set_online(True)
        return _reply(success())

    async def offline(self, request: Request) -> HTTPResponse:
        self.rt.set_online(False)
        return _reply(success())

    async def live(self, request: Request) -> HTTPResponse:
        if self.rt.dataplane.live:
            return _reply(success())
        return _reply(failure(503, "Service Unavailable"))

    async def ready(self, request: Request) -> HTTPResponse:
        if self.rt.ready():
            return _reply(success())
        return _reply(failure(503, "Service Unavailable"))

    # ---- metadata ----

    async def server_metadata(self, request: Request) -> HTTPResponse:
        message = success()
        message.str_data = server_yaml(self.context)
        return _reply(message)

    async def model_metadata(self, request: Request) -> HTTPResponse:
        data = load_object(request.body) if request.body else {}
        name = data.get("str_data") or data.get("strData")
        if not isinstance(name, str) or not name:
            raise InvalidArgument('No model name: send {"str_data": "<model name>"}')
        message = success()
        message.str_data = model_yaml(self.rt.dataplane, name)
        return _reply(message)

    # ---- inference ----

    async def predict(self, request: Request) -> HTTPResponse | None:
        content_type = request.headers.get("content-type")
        if content_type is None:
            raise InvalidArgument("No content type in headers.")
        if content_type not in (JSON, OCTET):
            raise InvalidArgument(
                f"Unsupported content type '{content_type}': use exactly {JSON} or {OCTET}"
            )
        data = load_object(request.body) if content_type == JSON else None
        streaming = wants_streaming(self.rt.options, request, data)
        as_ndarray = str(request.args.get("return-ndarray", "")).lower() == "true"
        if streaming and as_ndarray:
            raise InvalidArgument("Streaming and return-ndarray are not supported at the same time.")
        with self.rt.observed() as seen:
            payload, payload_model = parse_predict(data) if data is not None else (Payload("bin_data", request.body), "")
            inference = self.rt.decode(payload, payload_model, request.args.get("model", ""), seen)
            if streaming:
                await stream_http(self.rt, request, inference, payload.kind, seen)
                return None
            response = await self.rt.infer(inference)
            if as_ndarray:
                body = {"status": {"code": 200, "msg": "OK", "status": "SUCCESS"}, "ndarray": to_ndarray(response)}
                return _json(orjson.dumps(body))
            raw = single_bytes_of(response) if payload.kind == "bin_data" else None
            if raw is not None:
                return HTTPResponse(raw, content_type=OCTET)
            return _reply(success(to_message(response, payload.kind)))

    # ---- monitor ----

    async def page(self, request: Request) -> HTTPResponse:
        return HTTPResponse(self.dashboard, content_type="text/html; charset=utf-8")

    async def series(self, request: Request) -> HTTPResponse:
        try:
            window = int(request.args.get("window", "60"))
        except ValueError:
            raise InvalidArgument("window must be a whole number of seconds") from None
        return _json(orjson.dumps(self.rt.monitor.series(window)))

    async def metrics(self, request: Request) -> HTTPResponse:
        return _json(orjson.dumps({"models": self.rt.monitor.metrics(), "online": self.rt.online}))


def render_error(message: str, status: int) -> HTTPResponse:
    """grps's shape for errors raised before a route runs (404, 405, 413 under /grps/v1)."""
    return _reply(failure(status, message))


async def _on_error(request: Request, error: ModelPlatformError) -> HTTPResponse:
    return _reply(from_error(error))


async def _on_unexpected(request: Request, error: Exception) -> HTTPResponse:
    return _reply(failure(500, f"internal error: {type(error).__name__}: {error}"))


class GrpsBlueprint(Blueprint):
    """Names the model when its custom route collides with a route registered earlier."""

    def register(self, app: Sanic, options: dict) -> None:  # type: ignore[override]
        try:
            super().register(app, options)
        except RouteExists as error:
            models = ", ".join(f"'{r.model}' ({r.path})" for r in self.ctx.custom_routes)
            raise PluginError(
                f"grps custom HTTP path of model {models} collides with an existing route: {error}"
            ) from None


def build_blueprint(context: ServerContext) -> Blueprint:
    rt = runtime(context)
    routes = GrpsRoutes(context, rt)
    custom = declared_routes(context, BUILT_IN)
    bp = GrpsBlueprint(DIALECT)
    bp.ctx.custom_routes = custom
    both = ["GET", "POST"]
    bp.add_route(routes.predict, f"{PREFIX}/infer/predict", methods=["POST"], name="predict")
    for kind in ("online", "offline", "live", "ready"):
        bp.add_route(getattr(routes, kind), f"{PREFIX}/health/{kind}", methods=both, name=f"health_{kind}")
    bp.add_route(routes.server_metadata, f"{PREFIX}/metadata/server", methods=both, name="metadata_server")
    bp.add_route(routes.model_metadata, f"{PREFIX}/metadata/model", methods=both, name="metadata_model")
    bp.add_route(routes.page, "/", methods=["GET"], name="monitor_page")
    bp.add_route(routes.series, f"{PREFIX}/monitor/series", methods=["GET"], name="monitor_series")
    bp.add_route(routes.metrics, f"{PREFIX}/monitor/metrics", methods=["GET"], name="monitor_metrics")
    add_custom_routes(bp, rt, custom)

    @bp.before_server_start
    async def _check_custom(app: Sanic) -> None:
        check_no_shadowing(app, custom, DIALECT)

    bp.exception(ModelPlatformError)(_on_error)
    bp.exception(Exception)(_on_unexpected)
    return bp
