"""The ``/v1`` routes: TF Serving's REST API, each declared once.

TF Serving matches its two URL patterns case-insensitively and URL-decodes
the model name and label (protocol-notes B1): every route here ignores case
and the core decodes path parameters. Whatever else arrives under ``/v1``
(any method) is TF Serving's "Malformed request" 400, or a CORS preflight.
Every answer, error or not, is ``application/json``. ``:predict``,
``:classify`` and ``:regress`` are hot: the core also answers them on its
fast lane from these same declarations.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from modelplatform import HttpReply, HttpRequest, HttpRoute, InvalidArgument, RouteDoc, ServerContext

from ..examples import examples_from_json
from ..json_body import parse_object
from ..json_out import INDENT, document, error_body, float_texts, key_text
from ..servables import Selector, known_versions
from ..servables import status as model_status
from ..service import Classification, TfService
from . import documents, predict_json

DIALECT = "tfserving-rest"
NAME = "{model:[^/:]+}"
#: Where a version or a label may follow the model name (both URL forms TF Serving accepts).
SERVABLES = (NAME, NAME + "/versions/{version:[0-9]+}", NAME + "/labels/{label:[^/:]+}")
VERBS = "{verb:classify|regress|predict}"
ANY_METHOD = ("GET", "POST", "OPTIONS", "PUT", "DELETE", "PATCH", "HEAD")
_ORIGIN = re.compile(r"https?://", re.IGNORECASE)
JSON = "application/json"


def _json(text: str, status: int = 200) -> HttpReply:
    return HttpReply(status, text.encode(), JSON)


def render_error(message: str, status: int) -> HttpReply:
    return _json(error_body(message), status)


def _selector(request: HttpRequest) -> Selector:
    params = request.params
    return Selector(params["model"], params.get("version", ""), params.get("label", ""))


class TfRoutes:
    def __init__(self, context: ServerContext) -> None:
        self.service = TfService(context)
        self.dataplane = context.dataplane

    async def other(self, request: HttpRequest) -> HttpReply:
        """Anything under /v1 that no route took: a CORS preflight, or malformed."""
        if request.method == "OPTIONS":
            return self.preflight(request)
        raise InvalidArgument(f"Malformed request: {request.method} {request.path}")

    def preflight(self, request: HttpRequest) -> HttpReply:
        if not _ORIGIN.match(request.headers.get("origin", "")):
            raise InvalidArgument("Origin header is missing in CORS preflight")
        return _json("")

    async def all_models(self, request: HttpRequest) -> HttpReply:
        return _json(documents.pretty(self._all_models()))

    async def metadata(self, request: HttpRequest) -> HttpReply:
        return _json(documents.pretty(self._metadata(_selector(request))))

    async def status(self, request: HttpRequest) -> HttpReply:
        statuses = model_status(self.dataplane, _selector(request), self.service.signatures)
        return _json(documents.pretty(documents.status_json(statuses)))

    def _metadata(self, selector: Selector) -> dict[str, Any]:
        target = self.service.resolve(selector, "")
        declared = self.service.signatures.of(target.model)
        return documents.metadata_json(selector.name, target.model.version, declared)

    def _all_models(self) -> dict[str, Any]:
        """Extension: every model and its versions (TF Serving answers 400 here)."""
        names = sorted({entry.name for entry in self.dataplane.repository.index()})
        models = []
        for name in names:
            statuses = (
                model_status(self.dataplane, Selector(name), self.service.signatures)
                if known_versions(self.dataplane, name)
                else []
            )
            models.append({"name": name, **documents.status_json(statuses)})
        return {"models": models}

    async def post(self, request: HttpRequest) -> HttpReply:
        doc = parse_object(request.body)
        selector, verb = _selector(request), request.params["verb"].lower()
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
        rows.append("[" + ", ".join(f"[{label}, {score}]" for label, score in zip(labels, scores)) + "]")
    return "[" + ", ".join(rows) + ("\n" + INDENT + "]" if rows else "]")


_OBJECT = {"type": "object"}
#: TF Serving's request bodies (its REST API page): row (``instances``) or columnar (``inputs``)
#: for predict, ``examples`` for classify and regress.
PREDICT_BODY = {"type": "object", "description": "predict: instances (row) or inputs (columnar); "
                "classify/regress: examples", "properties": {
    "signature_name": {"type": "string"}, "instances": {"type": "array"}, "inputs": {},
    "examples": {"type": "array", "items": _OBJECT}, "context": _OBJECT}}  # fmt: skip
_PREDICT = RouteDoc(summary="Predict, classify or regress", request=PREDICT_BODY, responses={200: _OBJECT})
_STATUS = RouteDoc(summary="Model version status", responses={200: _OBJECT})
_METADATA = RouteDoc(summary="Model metadata (signature defs)", responses={200: _OBJECT})
_MODELS = RouteDoc(summary="Every model's status", responses={200: _OBJECT})


def tfserving_routes(context: ServerContext) -> list[HttpRoute]:
    routes = TfRoutes(context)
    declared = [HttpRoute(("GET",), "/v1/models", routes.all_models, ignore_case=True, category="metadata",
                          doc=_MODELS)]  # fmt: skip
    for servable in SERVABLES:
        path = f"/v1/models/{servable}"
        declared += [
            HttpRoute(
                ("POST",),
                f"{path}:{VERBS}",
                routes.post,
                hot=True,
                ignore_case=True,
                model_param="model",
                category="inference",
                doc=_PREDICT,
            ),
            HttpRoute(("GET",), path, routes.status, ignore_case=True, category="metadata", doc=_STATUS),
            HttpRoute(
                ("GET",),
                f"{path}/metadata",
                routes.metadata,
                ignore_case=True,
                category="metadata",
                doc=_METADATA,
            ),
        ]
    # Every other /v1 path answers TF Serving's own "not found" shape: metadata, like /v1/models.
    declared.append(
        HttpRoute(ANY_METHOD, "/v1/{path:path}", routes.other, ignore_case=True, category="metadata")
    )
    return declared
