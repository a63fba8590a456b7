"""``/v2/repository[/{repo}]/index`` and ``.../models/{name}/load|unload`` over HTTP.

Shapes follow Triton (protocol-notes A5): the index accepts an empty body
(tritonclient sends one) and refuses a non-boolean ``ready``; load/unload
answer 200 with an empty body; errors are ``{"error": "..."}`` with the same
status table as the oip-rest dialect; the restricted-API refusal is 403.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import orjson
from sanic import Blueprint, HTTPResponse, Request

from modelplatform import IndexEntry, InvalidArgument, ModelPlatformError, ServerContext, json_error
from modelplatform_oip.api import http_status

from .access import Restriction
from .operations import LoadParameters, RepositoryOperations
from .uploads import FILE_PREFIX

DIALECT = "repository"
PREFIXES = ("/v2/repository", "/v2/repository/<repo:str>")


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


def _body(request: Request) -> dict[str, Any]:
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


def _check_unload(params: dict[str, Any]) -> None:
    dependents = params.get("unload_dependents", False)
    if not isinstance(dependents, bool):
        raise InvalidArgument("unload parameter 'unload_dependents' must be a boolean")


class RepositoryRoutes:
    def __init__(self, context: ServerContext) -> None:
        self.ops = RepositoryOperations(context)
        self.restriction = Restriction.from_settings(context.settings)

    def _admit(self, request: Request, repo: str) -> None:
        self.restriction.check(request.headers.get)
        self.ops.check_repository(repo)

    async def index(self, request: Request, repo: str = "") -> HTTPResponse:
        self._admit(request, repo)
        ready = _body(request).get("ready", False)
        if not isinstance(ready, bool):
            raise InvalidArgument("'ready' must be a boolean")
        entries = [entry_json(e) for e in self.ops.index(ready)]
        return HTTPResponse(orjson.dumps(entries), content_type="application/json")

    async def load(self, request: Request, model: str, repo: str = "") -> HTTPResponse:
        self._admit(request, repo)
        await self.ops.load(model, load_parameters(_parameters(_body(request))))
        return HTTPResponse(status=200, content_type="text/plain; charset=utf-8")

    async def unload(self, request: Request, model: str, repo: str = "") -> HTTPResponse:
        self._admit(request, repo)
        _check_unload(_parameters(_body(request)))
        await self.ops.unload(model)
        return HTTPResponse(status=200, content_type="text/plain; charset=utf-8")


async def _on_error(request: Request, error: ModelPlatformError) -> HTTPResponse:
    return json_error(error.message, http_status(error))


def build_blueprint(context: ServerContext) -> Blueprint:
    routes = RepositoryRoutes(context)
    bp = Blueprint(DIALECT)
    for number, prefix in enumerate(PREFIXES):
        bp.add_route(routes.index, f"{prefix}/index", methods=["POST"], name=f"index{number}")
        for action in ("load", "unload"):
            bp.add_route(
                getattr(routes, action),
                f"{prefix}/models/<model:str>/{action}",
                methods=["POST"],
                name=f"{action}{number}",
            )
    bp.exception(ModelPlatformError)(_on_error)
    return bp
