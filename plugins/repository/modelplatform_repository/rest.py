"""``/v2/repository[/{repo}]/index`` and ``.../models/{name}/load|unload`` over HTTP.

Shapes follow Triton (protocol-notes A5): the index accepts an empty body
(tritonclient sends one) and refuses a non-boolean ``ready``; load/unload
answer 200 with an empty body; errors are ``{"error": "..."}`` with the same
status table as the oip-rest dialect. Restrictions and API keys are checked by
the core before a handler runs (category ``model-repository``).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import orjson

from modelplatform import (
    HttpReply,
    HttpRequest,
    HttpRoute,
    IndexEntry,
    InvalidArgument,
    RouteDoc,
    ServerContext,
)

from .operations import LoadParameters, RepositoryOperations
from .uploads import FILE_PREFIX

DIALECT = "repository"
PREFIXES = ("/v2/repository", "/v2/repository/{repo}")
EMPTY_TYPE = "text/plain; charset=utf-8"
CATEGORY = "model-repository"


def entry_json(entry: IndexEntry) -> dict[str, str]:
    """Never-loaded models carry only a name; empty version and reason are left out."""
    data = {"name": entry.name}
    if entry.state:
        if entry.version:
            data["version"] = entry.version
        data["state"] = entry.state
        if entry.reason:
            data["reason"] = entry.reason
    return data


def _body(request: HttpRequest) -> dict[str, Any]:
    if not request.body:
        return {}
    try:
        body = orjson.loads(request.body)
    except orjson.JSONDecodeError as error:
        raise InvalidArgument(f"failed to parse the request JSON body: {error}") from None
    if not isinstance(body, dict):
        raise InvalidArgument("the request body must be a JSON object")
    return body


def _parameters(body: dict[str, Any]) -> dict[str, Any]:
    params = body.get("parameters", {})
    if not isinstance(params, dict):
        raise InvalidArgument("'parameters' must be a JSON object")
    return params


def load_parameters(params: dict[str, Any]) -> LoadParameters:
    config = params.get("config")
    if config is not None and not isinstance(config, str):
        raise InvalidArgument("load parameter 'config' must be a string holding the JSON configuration")
    files = {k: _base64(k, v) for k, v in params.items() if k.startswith(FILE_PREFIX)}
    return LoadParameters(config, files)


def _base64(key: str, value: Any) -> bytes:
    if not isinstance(value, str):
        raise InvalidArgument(f"load parameter '{key}' must be a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgument(f"load parameter '{key}' is not valid base64") from None


def _check_unload(params: dict[str, Any]) -> bool:
    dependents = params.get("unload_dependents", False)
    if not isinstance(dependents, bool):
        raise InvalidArgument("unload parameter 'unload_dependents' must be a boolean")
    return dependents


class RepositoryRoutes:
    def __init__(self, context: ServerContext) -> None:
        self.ops = RepositoryOperations(context)

    def _admit(self, request: HttpRequest) -> None:
        self.ops.check_repository(request.params.get("repo", ""))

    async def index(self, request: HttpRequest) -> HttpReply:
        self._admit(request)
        ready = _body(request).get("ready", False)
        if not isinstance(ready, bool):
            raise InvalidArgument("'ready' must be a boolean")
        entries = [entry_json(e) for e in await self.ops.index(ready)]
        return HttpReply(200, orjson.dumps(entries))

    async def load(self, request: HttpRequest) -> HttpReply:
        self._admit(request)
        await self.ops.load(request.params["model"], load_parameters(_parameters(_body(request))))
        return HttpReply(200, b"", EMPTY_TYPE)

    async def unload(self, request: HttpRequest) -> HttpReply:
        self._admit(request)
        dependents = _check_unload(_parameters(_body(request)))
        await self.ops.unload(request.params["model"], dependents)
        return HttpReply(200, b"", EMPTY_TYPE)


_INDEX_ENTRY = {"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string"}, "version": {"type": "string"}, "state": {"type": "string"},
    "reason": {"type": "string"}}}  # fmt: skip
_PARAMETERS_BODY = {"type": "object", "properties": {"parameters": {"type": "object"}}}
_DONE = {200: None}
INDEX = RouteDoc(summary="The repository's models", request={"type": "object", "properties": {
    "ready": {"type": "boolean"}}}, responses={200: {"type": "array", "items": _INDEX_ENTRY}})  # fmt: skip
LOAD = RouteDoc(
    summary="Load (or reload) a model; parameters: config, file:<path>",
    request=_PARAMETERS_BODY,
    responses=_DONE,
    response_type="text/plain",
)
UNLOAD = RouteDoc(
    summary="Unload a model; parameters: unload_dependents",
    request=_PARAMETERS_BODY,
    responses=_DONE,
    response_type="text/plain",
)


def repository_routes(context: ServerContext) -> list[HttpRoute]:
    routes = RepositoryRoutes(context)
    declared = []
    for prefix in PREFIXES:
        declared += [
            HttpRoute(("POST",), f"{prefix}/index", routes.index, category=CATEGORY, doc=INDEX),
            HttpRoute(("POST",), f"{prefix}/models/{{model}}/load", routes.load, category=CATEGORY, doc=LOAD),
            HttpRoute(("POST",), f"{prefix}/models/{{model}}/unload", routes.unload, category=CATEGORY,
                      doc=UNLOAD),
        ]  # fmt: skip
    return declared
