"""Hook implementations of the ``metrics`` plugin."""

from __future__ import annotations

from modelplatform import HttpDialect, ServerContext, Settings, hookimpl

from .options import MetricsOptions
from .routes import DIALECT, PATH, error_status, metrics_routes, service_of


@hookimpl
def register_http_dialects(settings: Settings) -> list[HttpDialect]:
    options = MetricsOptions.from_settings(settings)  # a bad --metrics-config stops start-up here
    options.apply_buckets()  # before any model loads: their histograms take these bounds
    if not options.allowed:
        return []
    return [HttpDialect(DIALECT, metrics_routes, error_status, path_prefix=PATH)]


@hookimpl
async def startup(server: ServerContext) -> None:
    if server.settings.allow_metrics:
        await service_of(server).start()


@hookimpl
async def shutdown(server: ServerContext) -> None:
    if server.settings.allow_metrics:
        await service_of(server).stop()
