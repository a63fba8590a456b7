"""The ``/v1`` routes: TF Serving's REST API, dispatched as TF Serving does.

Sanic routes are case-sensitive and treat ``:`` as ordinary text, so one
catch-all route per spelling of ``/v1`` hands every request to a dispatcher
that matches TF Serving's two case-insensitive patterns against the raw path
and URL-decodes the model name and label (protocol-notes B1). Every answer,
error or not, is ``application/json``.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

import numpy as np
import structlog
from sanic import Blueprint, HTTPResponse, Request

from modelplatform import InvalidArgument, ModelPlatformError, ServerContext

from ..errors import http_status
from ..examples import examples_from_json
from ..json_body import parse_object
from ..json_out import INDENT, document, error_body, float_texts, key_text
from ..servables import Selector, status as model_status, known_versions
from ..service import Classification, TfService
from ..signatures import signatures_of
from . import documents, predict_json

DIALECT = "tfserving-rest"
log = structlog.get_logger("modelplatform_tfserving.rest")

_POST = re.compile(
    r"/v1/models/([^/:]+)(?:/versions/(\d+)|/labels/([^/:]+))?:(classify|regress|predict)",
    re.IGNORECASE,
)
_GET = re.compile(
    r"/v1/models(?:/([^/:]+)(?:/versions/(\d+)|/labels/([^/:]+))?(/metadata)?)?",
    re.IGNORECASE,
)
_METHODS = ["GET", "POST", "OPTIONS", "PUT", "DELETE", "PATCH", "HEAD"]
_ORIGIN = re.compile(r"https?://", re.IGNORECASE)
JSON = "application/json"


def _json(text: str, status: int = 200) -> HTTPResponse:
    return HTTPResponse(text, status=status, content_type=JSON)


def _selector(match: re.Match[str]) -> Selector:
    name, version, label = match.group(1), match.group(2), match.group(3)
    return Selector(unquote(name), version or "", unquote(label) if label else "")


class TfRoutes:
    def __init__(self, context: ServerContext) -> None:
        self.service = TfService(context)
        self.dataplane = context.dataplane

    async def dispatch(self, request: Request, path: str = "") -> HTTPResponse:
        method, raw = request.method, request.path
        if method == "OPTIONS":
            return self.preflight(request)
        if method == "POST" and (match := _POST.fullmatch(raw)):
            return await self.post(request, match)
        if method == "GET" and (match := _GET.fullmatch(raw)):
            return self.get(match)
        raise InvalidArgument(f"Malformed request: {method} {raw}")

    def preflight(self, request: Request) -> HTTPResponse:
        if not _ORIGIN.match(request.headers.get("origin", "")):
            raise InvalidArgument("Origin header is missing in CORS preflight")
        return _json("")

    def get(self, match: re.Match[str]) -> HTTPResponse:
        if match.group(1) is None:
            return _json(documents.pretty(self._all_models()))
        selector = _selector(match)
        if match.group(4):
            return _json(documents.pretty(self._metadata(selector)))
        return _json(documents.pretty(documents.status_json(model_status(self.dataplane, selector))))

    def _metadata(self, selector: Selector) -> dict:
        target = self.service.resolve(selector, "")
        signatures = signatures_of(target.model.config).signatures
        return documents.metadata_json(selector.name, target.model.version, signatures)

    def _all_models(self) -> dict:
        """Extension: every model and its versions (TF Serving answers 400 here)."""
        names = sorted({entry.name for entry in self.dataplane.index()})
        models = []
        for name in names:
            statuses = model_status(self.dataplane, Selector(name)) if known_versions(self.dataplane, name) else []
            models.append({"name": name, **documents.status_json(statuses)})
        return {"models": models}

    async def post(self, request: Request, match: re.Match[str]) -> HTTPResponse:
        doc = parse_object(request.body)
        selector, verb = _selector(match), match.group(4).lower()
        target = self.service.resolve(selector, predict_json.signature_name(doc))
        if verb == "predict":
            fmt = predict_json.request_format(doc)
            inputs = predict_json.decode_inputs(doc, fmt, target.signature, self.service.limits)
            outputs = await self.service.predict(target, inputs)
            return _json(predict_json.encode_outputs(outputs, fmt))
        examples = examples_from_json(doc)
        if verb == "regress":
            values = await self.service.regress(target, examples)
            return _json(document("results", "[" + ", ".join(float_texts(_f32(values))) + "]"))
        return _json(document("results", _classifications(await self.service.classify(target, examples))))


def _f32(values: list[float]) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def _classifications(results: list[Classification]) -> str:
    rows = []
    for pairs in results:
        scores = float_texts(_f32([score for _, score in pairs]))
        labels = [key_text(label) for label, _ in pairs]
        rows.append("[" + ", ".join(f"[{l}, {s}]" for l, s in zip(labels, scores)) + "]")
    return "[" + ", ".join(rows) + ("\n" + INDENT + "]" if rows else "]")


async def _on_error(request: Request, error: ModelPlatformError) -> HTTPResponse:
    return _json(error_body(error.message), http_status(error))


async def _on_crash(request: Request, error: Exception) -> HTTPResponse:
    log.error("request_failed", path=request.path, error=type(error).__name__)
    return _json(error_body(f"Internal error: {type(error).__name__}"), 500)


def build_blueprint(context: ServerContext) -> Blueprint:
    routes = TfRoutes(context)
    bp = Blueprint(DIALECT.replace("-", "_"))
    for prefix in ("/v1", "/V1"):
        bp.add_route(routes.dispatch, f"{prefix}/<path:path>", methods=_METHODS, name=f"dispatch{prefix[1]}")
    bp.exception(ModelPlatformError)(_on_error)
    bp.exception(Exception)(_on_crash)
    return bp
