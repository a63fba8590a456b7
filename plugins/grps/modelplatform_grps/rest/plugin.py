"""Hook implementations of the ``grps-rest`` plugin."""

from __future__ import annotations

from modelplatform import HttpDialect, Settings, hookimpl

from .routes import DIALECT, PREFIX, build_blueprint, render_error


@hookimpl
def register_http_dialects(settings: Settings) -> list[HttpDialect]:
    return [
        HttpDialect(DIALECT, build_blueprint, path_prefix=f"{PREFIX}/", render_error=render_error)
    ]
