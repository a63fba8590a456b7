"""Models' own HTTP routes (grps "customized predict HTTP").

A model declares ``parameters { key: "grps.http_path" value { string_value:
"/my/path" } }`` in its config.pbtxt; the route (GET and POST) hands the raw
body and headers to the model through ``dataplane.inference.call_raw`` (python models:
an ``http(body, headers)`` method) and answers its bytes, streamed when the
backend returns chunks; the call counts in flight and in the statistics.
Paths are read from the repository at start-up and must not collide with
grps's own routes or each other (checked here) nor with another dialect's
(checked by the core's router): a collision stops start-up.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass

import structlog

from modelplatform import (
    DataPlane,
    HttpReply,
    HttpRequest,
    HttpRoute,
    InvalidArgument,
    ModelPlatformError,
    PluginError,
    ServerContext,
)

from ..models import choose_model
from ..runtime import GrpsRuntime

log = structlog.get_logger("modelplatform.grps")
PARAMETER = "grps.http_path"
#: The route's API category (restricted APIs, API keys); the core refuses unknown names.
CATEGORY = "grps.http_category"


@dataclass(frozen=True, slots=True)
class CustomRoute:
    model: str
    path: str
    #: The API category the model chose (``grps.http_category``); inference unless it says.
    category: str = "inference"


def declared_routes(context: ServerContext, reserved: Iterable[str]) -> list[CustomRoute]:
    """Every model's ``grps.http_path``, checked against grps's own paths and each other."""
    taken = {_key(p): "grps built-in" for p in reserved}
    routes = []
    for name in sorted({e.name for e in context.dataplane.repository.index()}):
        path = _declared(context.dataplane, name, PARAMETER)
        if not path:
            continue
        if not path.startswith("/") or "{" in path:
            raise PluginError(f"model '{name}': {PARAMETER} '{path}' must be a static absolute path")
        if _key(path) in taken:
            raise PluginError(
                f"model '{name}': {PARAMETER} '{path}' collides with the route of {taken[_key(path)]}"
            )
        taken[_key(path)] = f"model '{name}'"
        routes.append(CustomRoute(name, path, _declared(context.dataplane, name, CATEGORY) or "inference"))
    return routes


def _key(path: str) -> str:
    return path.rstrip("/") or "/"


def _declared(dataplane: DataPlane, name: str, parameter: str) -> str:
    try:
        config = dataplane.repository.repository_config(name)
    except ModelPlatformError:  # the model manager reports a bad config
        return ""
    return config.parameters.get(parameter, "").strip() if config is not None else ""


class CustomHandler:
    def __init__(self, runtime: GrpsRuntime, route: CustomRoute) -> None:
        self.runtime = runtime
        self.route = route

    async def __call__(self, request: HttpRequest) -> HttpReply:
        try:
            version = self._version(request.query.get("model", ""))
        except ModelPlatformError:
            # Refused before the call: the statistics never saw it, so count it here (OTHER).
            self.runtime.inference.count_refused(self.route.model)
            raise
        raw = await self.runtime.inference.call_raw(
            self.route.model, version, bytes(request.body), dict(request.headers)
        )
        if isinstance(raw.body, bytes):
            return HttpReply(raw.status, raw.body, raw.content_type)
        # The first chunk comes before the reply: an early error keeps its status.
        try:
            first = await anext(raw.body, None)
        except BaseException:
            await raw.body.aclose()  # type: ignore[attr-defined]  # a streamed raw body is an async generator
            raise
        return HttpReply(raw.status, _rest(first, raw.body, self.route.model), raw.content_type)

    def _version(self, query_model: str) -> str:
        if not query_model:
            return ""
        name, version = choose_model("", query_model, "")
        if name != self.route.model:
            raise InvalidArgument(f"this route serves model '{self.route.model}', not '{name}'")
        return version


async def _rest(first: bytes | None, chunks: AsyncIterator[bytes], model: str) -> AsyncIterator[bytes]:
    """The stream after its first chunk; an error ends it early (headers are gone), logged."""
    try:
        item = first
        while item is not None:
            yield item
            item = await anext(chunks, None)
    except ModelPlatformError as error:
        log.error("grps_custom_stream_failed", model=model, error=error.message)
    finally:
        await chunks.aclose()  # type: ignore[attr-defined]  # a streamed raw body is an async generator


def custom_routes(context: ServerContext, runtime: GrpsRuntime, reserved: Iterable[str]) -> list[HttpRoute]:
    routes = []
    for route in declared_routes(context, reserved):
        name = f"{PARAMETER} of model '{route.model}'"
        handler = CustomHandler(runtime, route)
        routes.append(HttpRoute(("GET", "POST"), route.path, handler, name=name, category=route.category))
    return routes
