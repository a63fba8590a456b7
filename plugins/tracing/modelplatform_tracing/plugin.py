"""Hook implementations of the ``tracing`` plugin: off unless ``trace_otlp_endpoint`` is set.

When off, nothing is registered and requests pay nothing for tracing.
"""

from __future__ import annotations

import asyncio

import structlog

from modelplatform import ServerContext, hookimpl

from .spans import SpanWriter

log = structlog.get_logger("modelplatform.tracing")


class _Writers:
    """The server's span writer, once started (ServerContext.shared keys it by type)."""

    def __init__(self) -> None:
        self.writer: SpanWriter | None = None


@hookimpl
async def startup(server: ServerContext) -> None:
    settings = server.settings
    if not settings.trace_otlp_endpoint:
        return
    writer = SpanWriter(settings.trace_otlp_endpoint, settings.trace_rate, server.dataplane.server_name)
    server.shared(_Writers, _Writers).writer = writer
    server.dataplane.observers.append(writer)
    log.info("tracing_started", endpoint=settings.trace_otlp_endpoint, rate=settings.trace_rate)


@hookimpl
async def shutdown(server: ServerContext) -> None:
    writer = server.shared(_Writers, _Writers).writer
    if writer is not None:
        server.dataplane.observers.remove(writer)
        await asyncio.to_thread(writer.close)
