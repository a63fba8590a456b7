"""Hook implementations of the ``grps-rest`` plugin."""

from __future__ import annotations

from modelplatform import HttpDialect, Settings, hookimpl

from ..status import status_code
from .routes import DIALECT, PREFIX, grps_routes, render_error


@hookimpl
def register_http_dialects(settings: Settings) -> list[HttpDialect]:
    return [HttpDialect(DIALECT, grps_routes, status_code, render_error, path_prefix=f"{PREFIX}/", protocol="grps_http")]
