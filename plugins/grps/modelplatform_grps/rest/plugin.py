"""Hook implementations of the ``grps-rest`` plugin."""

from __future__ import annotations

from modelplatform import HttpDialect, Settings, hookimpl

from .routes import DIALECT, build_blueprint


@hookimpl
def register_http_dialects(settings: Settings) -> list[HttpDialect]:
    return [HttpDialect(DIALECT, build_blueprint)]
