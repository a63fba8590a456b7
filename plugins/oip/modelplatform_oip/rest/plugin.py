"""Hook implementations of the ``oip-rest`` plugin."""

from __future__ import annotations

from modelplatform import HttpDialect, Settings, hookimpl

from .routes import DIALECT, oip_routes
from .status import http_status


@hookimpl
def register_http_dialects(settings: Settings) -> list[HttpDialect]:
    extensions = (
        "classification",
        "schedule_policy",
        "sequence",
        "model_configuration",
        "parameters",
        "statistics",
        "logging",
    )
    return [HttpDialect(DIALECT, oip_routes, http_status, extensions=extensions, protocol="oip_http")]
