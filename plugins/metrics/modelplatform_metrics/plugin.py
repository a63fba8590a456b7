"""Hook implementations of the ``metrics`` plugin: the Prometheus families and the live page."""

from __future__ import annotations

from collections.abc import Sequence

from modelplatform import HttpDialect, Option, ServerContext, Settings, hookimpl
from modelplatform.statistics import set_latency_buckets

from .live_routes import DIALECT as LIVE_DIALECT
from .live_routes import board_of, live_routes
from .options import OPTIONS, MetricsOptions
from .routes import DIALECT, PATH, error_status, metrics_routes, service_of


@hookimpl
def register_options() -> Sequence[Option]:
    return OPTIONS


@hookimpl
def register_http_dialects(settings: Settings) -> list[HttpDialect]:
    options = MetricsOptions.from_settings(settings)  # a bad --metrics-config stops start-up here
    # The live page is for people, not scrapers: it stays with --no-allow-metrics.
    live = HttpDialect(LIVE_DIALECT, live_routes, error_status)
    if not options.allowed:
        return [live]
    return [HttpDialect(DIALECT, metrics_routes, error_status, path_prefix=PATH), live]


@hookimpl
def configure(server: ServerContext) -> None:
    """This server's latency histogram bounds, before any of its models loads."""
    set_latency_buckets(server, MetricsOptions.from_settings(server.settings).latency_buckets_us)


@hookimpl
async def startup(server: ServerContext) -> None:
    await board_of(server).start()
    if MetricsOptions.from_settings(server.settings).allowed:
        await service_of(server).start(server.ssl_context("metrics"))


@hookimpl
async def shutdown(server: ServerContext) -> None:
    if MetricsOptions.from_settings(server.settings).allowed:
        await service_of(server).stop()
    await board_of(server).stop()
