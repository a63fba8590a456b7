"""The server's tracing: its live settings and, with an OTLP endpoint, its span writer.

The writer is a request observer only while some setting traces: with every
level OFF it is taken off the server's observers (the registration it holds), and requests pay for
tracing no more than when it was never started.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from modelplatform import ServerContext

from .options import TracingOptions
from .settings import Changes, TraceSetting, TraceSettings
from .spans import SpanWriter

log = structlog.get_logger("modelplatform.tracing")

#: The ServerContext.broadcast topic on which a settings change reaches every worker.
TOPIC = "trace"


class Tracing:
    def __init__(self, context: ServerContext) -> None:
        options = TracingOptions.from_settings(context.settings)
        self.endpoint, self.rate = options.trace_otlp_endpoint, options.trace_rate
        default = TraceSetting(("TIMESTAMPS",) if self.endpoint else (), self.rate, -1)
        self.settings = TraceSettings(default, bool(self.endpoint), self._switch)
        self._context = context
        self._writer: SpanWriter | None = None
        #: Takes the writer off the observers again; None while it observes nothing.
        self._stop_observing: Callable[[], None] | None = None
        context.broadcast.subscribe(TOPIC, self._apply_published)

    async def change(self, model: str, changes: Changes) -> dict[str, str | list[str]]:
        """Apply ``changes`` here (checked first), then on every ``--workers`` sibling."""
        answer = self.settings.update(model, changes)
        await self._context.broadcast.publish(TOPIC, {"model": model, "changes": changes})
        return answer

    def _apply_published(self, payload: dict[str, object]) -> None:
        self.settings.update(str(payload["model"]), payload["changes"])  # type: ignore[arg-type]  # a sibling publishes changes already checked

    def start(self) -> None:
        if not self.endpoint:
            return
        self._writer = SpanWriter(self.endpoint, self.settings, self._context.dataplane.health.server_name)
        self._switch(self.settings.on)
        log.info("tracing_started", endpoint=self.endpoint, rate=self.rate)

    async def stop(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            self._observe(writer, False)
            await asyncio.to_thread(writer.close)

    def _switch(self, on: bool) -> None:
        if self._writer is not None:
            self._observe(self._writer, on)

    def _observe(self, writer: SpanWriter, on: bool) -> None:
        if on and self._stop_observing is None:
            self._stop_observing = self._context.dataplane.observation.add_observer(writer)
        elif not on and self._stop_observing is not None:
            self._stop_observing()
            self._stop_observing = None


def tracing_of(context: ServerContext) -> Tracing:
    """The server's one Tracing, made on first use (routes and start-up may come in any order)."""
    return context.shared(Tracing, lambda: Tracing(context))
