"""Hook implementations of the ``oip-rest`` plugin."""

from __future__ import annotations

from modelplatform import HttpDialect, Settings, hookimpl

from .routes import DIALECT, build_blueprint, fast_routes


@hookimpl
def register_http_dialects(settings: Settings) -> list[HttpDialect]:
    extensions = ("model_configuration", "parameters", "statistics")
    return [HttpDialect(DIALECT, build_blueprint, extensions=extensions, fast_routes=fast_routes)]
