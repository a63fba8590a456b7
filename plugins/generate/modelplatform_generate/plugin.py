"""Hook implementations of the ``generate`` plugin (Triton's generate extension)."""

from __future__ import annotations

from modelplatform import HttpDialect, Settings, hookimpl
from modelplatform_oip.api import http_status

from .routes import DIALECT, generate_routes


@hookimpl
def register_http_dialects(settings: Settings) -> list[HttpDialect]:
    # Counted as oip_http: the extension's requests are Triton HTTP requests.
    dialect = HttpDialect(
        DIALECT, generate_routes, http_status, extensions=("generate",), protocol="oip_http"
    )
    return [dialect]
