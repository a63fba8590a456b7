"""The documents and the docs page on the HTTP port, in API category ``docs``.

``/openapi.json`` (everything), ``/openapi/<dialect>.json``, ``<prefix>/openapi.json``
for each dialect prefix, ``/v2/models/<model>/openapi.json`` (that model's
routes, its infer body named from its metadata) and ``/docs``,
``/v2/models/<model>/docs``: Swagger UI, its assets served from the
``swagger-ui-bundle`` package, so the page works without a network.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote

import orjson

from modelplatform import (
    ErrorCode,
    HttpReply,
    HttpRequest,
    HttpRoute,
    ModelPlatformError,
    NotFound,
    RouteDoc,
    ServerContext,
)

from .catalogue import Catalogue, prefixes
from .page import Assets, docs_page

DIALECT = "openapi"
CATEGORY = "docs"
MODEL_DOCUMENT = "/v2/models/{model}/openapi.json"
_STATUS = {ErrorCode.NOT_FOUND: 404, ErrorCode.INVALID_ARGUMENT: 400, ErrorCode.UNAVAILABLE: 503,
           ErrorCode.PERMISSION_DENIED: 403}  # fmt: skip
_DOCUMENT = RouteDoc(responses={200: {"type": "object", "required": ["openapi", "paths"]}})
_PAGE = RouteDoc(responses={200: {"type": "string"}}, response_type="text/html")
_ASSET = RouteDoc(summary="A file of the docs page (Swagger UI)", responses={200: None})


def error_status(error: ModelPlatformError) -> int:
    return _STATUS.get(error.code, 500)


def _json(document: Any) -> HttpReply:
    return HttpReply(200, orjson.dumps(document))


class OpenApiRoutes:
    """Handlers over one server's catalogue; the whole-server documents are made once."""

    def __init__(self, context: ServerContext) -> None:
        self.catalogue = Catalogue(context)
        self.repository = context.dataplane.repository
        self._made: dict[str, bytes] = {}

    def _once(self, key: str, make: Callable[[], Any]) -> HttpReply:
        if key not in self._made:
            self._made[key] = orjson.dumps(make())
        return HttpReply(200, self._made[key])

    async def everything(self, request: HttpRequest) -> HttpReply:
        return self._once("", self.catalogue.everything)

    async def dialect(self, request: HttpRequest) -> HttpReply:
        name = request.params["dialect"]
        if name not in self.catalogue.dialect_names():
            raise NotFound(f"no dialect '{name}' is loaded")
        return self._once(f"dialect:{name}", lambda: self.catalogue.dialect(name))

    def prefix(self, prefix: str, dialects: list[str]) -> Callable[[HttpRequest], Any]:
        async def answer(request: HttpRequest) -> HttpReply:
            return self._once(f"prefix:{prefix}", lambda: self.catalogue.prefix(prefix, dialects))

        return answer

    async def model(self, request: HttpRequest) -> HttpReply:
        name = request.params["model"]
        metadata = self.repository.model_metadata(name, "")  # ModelNotFound: the dialect's 404
        return _json(self.catalogue.model(name, metadata))


def openapi_routes(context: ServerContext) -> Sequence[HttpRoute]:
    handlers = OpenApiRoutes(context)
    grouped = prefixes(context, DIALECT)
    documents = {"all": "/openapi.json", **{f"{p} ({', '.join(d)})": f"{p}/openapi.json"
                                          for p, d in grouped.items()}}  # fmt: skip
    documents.update({name: f"/openapi/{name}.json" for name in context.dialects if name != DIALECT})
    assets = Assets()
    declared = [
        _get("/openapi.json", handlers.everything, "Every loaded dialect's routes"),
        _get("/openapi/{dialect:[^/]+}.json", handlers.dialect, "One dialect's routes"),
        *[
            _get(f"{p}/openapi.json", handlers.prefix(p, d), f"The routes under {p}")
            for p, d in grouped.items()
        ],
        _get("/docs", docs_page(documents), "The docs page (Swagger UI)", _PAGE),
        _get("/docs/{asset}", assets.serve, "", _ASSET),
    ]
    if any("{model}" in route.path for name in context.dialects if name != DIALECT
           for route in context.routes_of(name)):  # fmt: skip
        declared += [
            _get(MODEL_DOCUMENT, handlers.model, "One model's routes, its inputs named"),
            _get("/v2/models/{model}/docs", _model_page, "One model's docs page", _PAGE),
        ]
    return declared


async def _model_page(request: HttpRequest) -> HttpReply:
    model = request.params["model"]
    page = docs_page({model: MODEL_DOCUMENT.replace("{model}", _quoted(model))})
    return await page(request)


def _quoted(name: str) -> str:
    return quote(name, safe="")


def _get(path: str, handler: Any, summary: str, doc: RouteDoc = _DOCUMENT) -> HttpRoute:
    described = RouteDoc(
        summary=summary or doc.summary, responses=doc.responses, response_type=doc.response_type
    )
    return HttpRoute(("GET",), path, handler, max_body_bytes=0, category=CATEGORY, doc=described)
