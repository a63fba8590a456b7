"""``GET /metrics`` on the HTTP port (KServe's convention): the same text as the metrics port."""

from __future__ import annotations

from collections.abc import Sequence

from modelplatform import (
    ErrorCode,
    HttpReply,
    HttpRequest,
    HttpRoute,
    ModelPlatformError,
    ServerContext,
    header_check,
)

from .exposition import CONTENT_TYPE
from .options import MetricsOptions
from .service import MetricsService

DIALECT = "metrics"
PATH = "/metrics"


def service_of(context: ServerContext) -> MetricsService:
    """The server's one MetricsService, made on first use."""
    return context.shared(MetricsService, lambda: _made(context))


def _made(context: ServerContext) -> MetricsService:
    options = MetricsOptions.from_settings(context.settings)
    return MetricsService(context.dataplane, options, header_check(context, "metrics"))


def metrics_routes(context: ServerContext) -> Sequence[HttpRoute]:
    service = service_of(context)

    async def metrics(request: HttpRequest) -> HttpReply:
        return HttpReply(200, await service.scrape(), CONTENT_TYPE)

    return [HttpRoute(("GET", "HEAD"), PATH, metrics, max_body_bytes=0, name="metrics", category="metrics")]


def error_status(error: ModelPlatformError) -> int:
    return {ErrorCode.NOT_FOUND: 404, ErrorCode.INVALID_ARGUMENT: 400}.get(error.code, 500)
