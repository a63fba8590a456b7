"""Hook implementations of the ``openai`` plugin (the OpenAI-compatible API)."""

from __future__ import annotations

from collections.abc import Sequence

from modelplatform import HttpDialect, Option, Settings, hookimpl

from .errors import http_status, render_error
from .options import OPTIONS, prefix_of
from .routes import DIALECT, ERROR_SCHEMA, routes_for


@hookimpl
def register_options() -> Sequence[Option]:
    return OPTIONS


@hookimpl
def register_http_dialects(settings: Settings) -> list[HttpDialect]:
    prefix = prefix_of(settings)
    return [HttpDialect(DIALECT, routes_for(settings), http_status, render_error, path_prefix=f"{prefix}/",
                        protocol="openai", error_schema=ERROR_SCHEMA, title="OpenAI")]  # fmt: skip
