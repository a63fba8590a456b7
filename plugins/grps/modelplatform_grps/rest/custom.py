"""Models' own HTTP routes (grps "customized predict HTTP").

A model declares ``parameters { key: "grps.http_path" value { string_value:
"/my/path" } }`` in its config.pbtxt; the route (GET and POST) hands the raw
body and headers to the model through ``DataPlane.call_raw`` (python models:
an ``http(body, headers)`` method) and answers its bytes, streamed when the
backend returns chunks; the call counts in flight and in the statistics. Paths are read from the repository at start-up and
must not collide with any other route on the port: a collision stops start.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sanic import Blueprint, HTTPResponse, Request, Sanic

import structlog

from modelplatform import DataPlane, InvalidArgument, ModelPlatformError, PluginError, ServerContext

from ..models import choose_model
from ..runtime import GrpsRuntime

log = structlog.get_logger("modelplatform.grps")
PARAMETER = "grps.http_path"


@dataclass(frozen=True, slots=True)
class CustomRoute:
    model: str
    path: str

    @property
    def route_name(self) -> str:
        return "custom_" + "".join(c if c.isalnum() else "_" for c in self.model)


def declared_routes(context: ServerContext, reserved: Iterable[str]) -> list[CustomRoute]:
    """Every model's ``grps.http_path``, checked against grps's own paths and each other."""
    taken = {_key(p): "grps built-in" for p in reserved}
    routes = []
    for name in sorted({e.name for e in context.dataplane.index()}):
        path = _declared_path(context.dataplane, name)
        if not path:
            continue
        if not path.startswith("/") or "<" in path:
            raise PluginError(f"model '{name}': {PARAMETER} '{path}' must be a static absolute path")
        if _key(path) in taken:
            raise PluginError(
                f"model '{name}': {PARAMETER} '{path}' collides with the route of {taken[_key(path)]}"
            )
        taken[_key(path)] = f"model '{name}'"
        routes.append(CustomRoute(name, path))
    return routes


def _key(path: str) -> str:
    return path.rstrip("/") or "/"


def _declared_path(dataplane: DataPlane, name: str) -> str:
    try:
        config = dataplane.repository_config(name)
    except ModelPlatformError:  # the model manager reports a bad config
        return ""
    return config.parameters.get(PARAMETER, "").strip() if config is not None else ""


def check_no_shadowing(app: Sanic, routes: list[CustomRoute], blueprint: str) -> None:
    """Refuse a custom path that another route (static or with parameters) also matches."""
    mine = {f"{app.name}.{blueprint}.{r.route_name}" for r in routes}
    for custom in routes:
        parts = tuple(p for p in custom.path.split("/") if p)
        for other in app.router.routes:
            if other.name not in mine and _matches(tuple(other.parts), parts):
                raise PluginError(
                    f"model '{custom.model}': {PARAMETER} '{custom.path}' collides with the "
                    f"existing route '/{other.path}' ({other.name})"
                )


def _matches(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    if pattern and pattern[-1].startswith("<") and ":path>" in pattern[-1]:
        return len(parts) >= len(pattern) and _matches(pattern[:-1], parts[: len(pattern) - 1])
    if len(pattern) != len(parts):
        return False
    return all(p == q or p.startswith("<") for p, q in zip(pattern, parts))


class CustomHandler:
    def __init__(self, runtime: GrpsRuntime, route: CustomRoute) -> None:
        self.runtime = runtime
        self.route = route

    async def __call__(self, request: Request) -> HTTPResponse | None:
        with self.runtime.observed() as seen:
            seen.model = self.route.model
            version = self._version(request.args.get("model", ""))
            raw = await self.runtime.dataplane.call_raw(
                self.route.model, version, request.body, dict(request.headers)
            )
            if isinstance(raw.body, bytes):
                return HTTPResponse(raw.body, status=raw.status, content_type=raw.content_type)
            chunks = raw.body
            try:
                # The first chunk comes before the headers: an early error keeps its status.
                first = await anext(chunks, None)
                http = await request.respond(status=raw.status, content_type=raw.content_type)
                await _send_rest(http, chunks, first, self.route.model, seen)
            finally:
                await chunks.aclose()  # type: ignore[attr-defined]
            return None

    def _version(self, query_model: str) -> str:
        if not query_model:
            return ""
        name, version = choose_model("", query_model, "")
        if name != self.route.model:
            raise InvalidArgument(f"this route serves model '{self.route.model}', not '{name}'")
        return version


async def _send_rest(http: Any, chunks: Any, first: bytes | None, model: str, seen: Any) -> None:
    try:
        item = first
        while item is not None:
            await http.send(item)
            item = await anext(chunks, None)
    except ModelPlatformError as error:
        # Headers are gone: the stream just ends early; the log says why.
        seen.failed = True
        log.error("grps_custom_stream_failed", model=model, error=error.message)
    await http.eof()


def add_custom_routes(bp: Blueprint, runtime: GrpsRuntime, routes: list[CustomRoute]) -> None:
    for route in routes:
        handler = CustomHandler(runtime, route)

        async def serve(request: Request, handler: CustomHandler = handler) -> HTTPResponse | None:
            return await handler(request)

        bp.add_route(serve, route.path, methods=["GET", "POST"], name=route.route_name)
