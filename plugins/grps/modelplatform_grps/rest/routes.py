"""The ``/grps/v1`` routes and grps's own monitor page (``/grps/v1/monitor``) on the shared HTTP port.

The server's live page at ``/`` (every dialect) is the metrics plugin's.

HTTP status equals ``status.code`` (as grps's Python server); every JSON
answer carries ``status``. Everything is resolved here, at start-up.
"""

from __future__ import annotations

import time
from importlib import resources
from typing import Any

import orjson

from modelplatform import (
    HttpReply,
    HttpRequest,
    HttpRoute,
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    RouteDoc,
    ServerContext,
)

from ..converter import Payload, single_bytes_of, to_message, to_ndarray
from ..metadata import model_yaml, server_yaml
from ..protos.grps_pb2 import GrpsMessage
from ..runtime import GrpsRuntime, runtime
from ..status import failure, success
from .custom import custom_routes
from .json_io import JSON, dump_message, float_gtensors_reply, gtensors_reply, load_object, parse_predict
from .streaming import stream_reply, wants_streaming

DIALECT = "grps-rest"
PREFIX = "/grps/v1"
OCTET = "application/octet-stream"
BOTH = ("GET", "POST")


def _json(body: bytes, status: int = 200) -> HttpReply:
    return HttpReply(status, body, JSON)


def _reply(message: GrpsMessage) -> HttpReply:
    return _json(dump_message(message), message.status.code or 200)


class GrpsRoutes:
    def __init__(self, context: ServerContext, rt: GrpsRuntime) -> None:
        self.context = context
        self.rt = rt
        self.dashboard = resources.files("modelplatform_grps").joinpath("static/monitor.html").read_bytes()

    # ---- health ----

    async def online(self, request: HttpRequest) -> HttpReply:
        self.rt.set_online(True)
        return _reply(success())

    async def offline(self, request: HttpRequest) -> HttpReply:
        self.rt.set_online(False)
        return _reply(success())

    async def live(self, request: HttpRequest) -> HttpReply:
        if self.rt.health.live:
            return _reply(success())
        return _reply(failure(503, "Service Unavailable"))

    async def ready(self, request: HttpRequest) -> HttpReply:
        if self.rt.ready():
            return _reply(success())
        return _reply(failure(503, "Service Unavailable"))

    # ---- metadata ----

    async def server_metadata(self, request: HttpRequest) -> HttpReply:
        message = success()
        message.str_data = server_yaml(self.context)
        return _reply(message)

    async def model_metadata(self, request: HttpRequest) -> HttpReply:
        data = load_object(request.body) if request.body else {}
        name = data.get("str_data") or data.get("strData")
        if not isinstance(name, str) or not name:
            raise InvalidArgument('No model name: send {"str_data": "<model name>"}')
        message = success()
        message.str_data = model_yaml(self.rt.dataplane, name)
        return _reply(message)

    # ---- inference ----

    async def predict(self, request: HttpRequest) -> HttpReply:
        data = _predict_document(request)
        query = request.query
        streaming = wants_streaming(self.rt.options, request, data)
        as_ndarray = str(query.get("return-ndarray", "")).lower() == "true"
        if streaming and as_ndarray:
            raise InvalidArgument("Streaming and return-ndarray are not supported at the same time.")

        def decode() -> tuple[str, InferenceRequest]:
            payload, payload_model = (
                parse_predict(data) if data is not None else (Payload("bin_data", request.body), "")
            )
            return payload.kind, self.rt.decode(payload, payload_model, query.get("model", ""))

        if streaming:
            return await stream_reply(self.rt, decode)
        kind, inference = decode()
        return _answer(await self.rt.infer(inference), kind, as_ndarray)

    # ---- monitor ----

    async def page(self, request: HttpRequest) -> HttpReply:
        return HttpReply(200, self.dashboard, "text/html; charset=utf-8")

    async def series(self, request: HttpRequest) -> HttpReply:
        try:
            window = int(request.query.get("window", "60"))
        except ValueError:
            raise InvalidArgument("window must be a whole number of seconds") from None
        return _json(orjson.dumps(self.rt.monitor.series(window, time.time())))

    async def metrics(self, request: HttpRequest) -> HttpReply:
        monitor = self.rt.monitor
        now = time.time()
        body = {"models": monitor.metrics(now), "online": self.rt.online, "sampled_at": monitor.sampled_at}
        return _json(orjson.dumps(body))


def _predict_document(request: HttpRequest) -> dict[str, Any] | None:
    """The JSON body of a predict request, or None for raw bytes (grps's two content types)."""
    content_type = request.headers.get("content-type")
    if content_type is None:
        raise InvalidArgument("No content type in headers.")
    if content_type not in (JSON, OCTET):
        raise InvalidArgument(f"Unsupported content type '{content_type}': use exactly {JSON} or {OCTET}")
    return load_object(request.body) if content_type == JSON else None


def _answer(response: InferenceResponse, kind: str, as_ndarray: bool) -> HttpReply:
    """The reply in the request's own form: ndarray, raw bytes, or a GrpsMessage."""
    if as_ndarray:
        body = {"status": {"code": 200, "msg": "OK", "status": "SUCCESS"}, "ndarray": to_ndarray(response)}
        return _json(orjson.dumps(body))
    raw = single_bytes_of(response) if kind == "bin_data" else None
    if raw is not None:
        return HttpReply(200, raw, OCTET)
    fast = _direct_gtensors(response) if kind in ("gtensors", "ndarray") else None
    return _json(fast) if fast is not None else _reply(success(to_message(response, kind)))


def _direct_gtensors(response: InferenceResponse) -> bytes | None:
    """The gtensors reply written without the message (both kinds answer gtensors), or None."""
    fast = gtensors_reply(response)
    return fast if fast is not None else float_gtensors_reply(response)


def render_error(message: str, status: int) -> HttpReply:
    """grps's shape for every error: HTTP status equals ``status.code``."""
    return _reply(failure(status, message))


_STATUS = {"type": "object", "required": ["code", "msg", "status"], "properties": {
    "code": {"type": "integer"}, "msg": {"type": "string"}, "status": {"type": "string"}}}  # fmt: skip
#: grps's answers and errors: a GrpsMessage whose ``status`` carries the outcome.
GRPS_MESSAGE = {"type": "object", "required": ["status"], "properties": {"status": _STATUS}}
_PREDICT = RouteDoc(
    summary="Predict: a GrpsMessage (str_data, bin_data, gtensors, gmap) or an ndarray",
    request={"type": "object", "properties": {"model": {"type": "string"}, "version": {"type": "string"},
                                               "str_data": {"type": "string"}, "ndarray": {}, "gtensors": {}}},
    responses={200: {"type": "object"}},
    other_types=(OCTET,),
)  # fmt: skip
_ANSWER = {200: GRPS_MESSAGE}
_DOCS = {
    "online": RouteDoc(summary="Take the server online", responses=_ANSWER),
    "offline": RouteDoc(summary="Take the server offline (new requests refused)", responses=_ANSWER),
    "live": RouteDoc(summary="Server live", responses=_ANSWER),
    "ready": RouteDoc(summary="Server ready", responses=_ANSWER),
    "server": RouteDoc(summary="Server metadata", responses=_ANSWER),
    "model": RouteDoc(summary="Model metadata", responses=_ANSWER),
    "page": RouteDoc(
        summary="The monitor page", responses={200: {"type": "string"}}, response_type="text/html"
    ),
}


def grps_routes(context: ServerContext) -> list[HttpRoute]:
    rt = runtime(context)
    routes = GrpsRoutes(context, rt)
    # The model is named in the body: a body that does not decode is counted under model "".
    predict = f"{PREFIX}/infer/predict"
    declared = [HttpRoute(("POST",), predict, routes.predict, hot=True, model_param="", category="inference",
                          doc=_PREDICT)]  # fmt: skip
    # Taking the server on or off line changes what it serves: admin, not health.
    kinds = (("online", "admin"), ("offline", "admin"), ("live", "health"), ("ready", "health"))
    for kind, category in kinds:
        declared.append(HttpRoute(BOTH, f"{PREFIX}/health/{kind}", getattr(routes, kind), category=category,
                                  doc=_DOCS[kind]))  # fmt: skip
    declared += [
        HttpRoute(
            BOTH,
            f"{PREFIX}/metadata/server",
            routes.server_metadata,
            category="metadata",
            doc=_DOCS["server"],
        ),
        HttpRoute(
            BOTH, f"{PREFIX}/metadata/model", routes.model_metadata, category="metadata", doc=_DOCS["model"]
        ),
        HttpRoute(("GET",), f"{PREFIX}/monitor", routes.page, category="metrics", doc=_DOCS["page"]),
        HttpRoute(("GET",), f"{PREFIX}/monitor/series", routes.series, category="metrics"),
        HttpRoute(("GET",), f"{PREFIX}/monitor/metrics", routes.metrics, category="metrics"),
    ]
    return declared + custom_routes(context, rt, [route.path for route in declared])
