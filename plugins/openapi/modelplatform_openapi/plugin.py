"""Hook implementations of the ``openapi`` plugin: the documents and the docs page."""

from __future__ import annotations

from modelplatform import HttpDialect, Settings, hookimpl

from .routes import DIALECT, error_status, openapi_routes


@hookimpl
def register_http_dialects(settings: Settings) -> list[HttpDialect]:
    return [HttpDialect(DIALECT, openapi_routes, error_status, title="OpenAPI documents")]
