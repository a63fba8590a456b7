"""Hook implementations of the ``tfserving-rest`` plugin."""

from __future__ import annotations

from modelplatform import HttpDialect, Settings, hookimpl

from ..errors import http_status

# A hook implementation both tfserving plugins offer: either alone warms a model up.
from ..warmup import warmup_requests as warmup_requests
from .routes import DIALECT, render_error, tfserving_routes


@hookimpl
def register_http_dialects(settings: Settings) -> list[HttpDialect]:
    return [
        HttpDialect(
            DIALECT,
            tfserving_routes,
            http_status,
            render_error,
            path_prefix="/v1/",
            protocol="tfserving_rest",
        )
    ]
