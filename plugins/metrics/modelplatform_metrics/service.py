"""One server's metrics: the scrape (counters summed over workers, latest samples) and the
sampling task and metrics port it runs between start-up and shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import ssl

import structlog

from modelplatform import DataPlane, HeaderCheck
from modelplatform.statistics import ModelStats

from .custom import custom_families
from .distributions import batch_sizes, latency_histograms, protocol_families
from .exposition import Family, render
from .families import cache_families, inference_families
from .lifecycle import operation_counters, state_gauge
from .options import MetricsOptions
from .port import MetricsPort
from .system import SystemSampler

log = structlog.get_logger("modelplatform.metrics")


class MetricsService:
    """Made once per server (``ServerContext.shared``); both endpoints scrape through it."""

    def __init__(
        self, dataplane: DataPlane, options: MetricsOptions, admit: HeaderCheck | None = None
    ) -> None:
        self._observation = dataplane.observation
        self._repository = dataplane.repository
        self.options = options
        #: The metrics port's restricted-API / API-key check (the HTTP port's is the core's).
        self._admit = admit
        self._sampler = SystemSampler()
        self._sampling: asyncio.Task[None] | None = None
        self._port: MetricsPort | None = None
        #: The port the metrics port bound (the asked one, or the free one picked for 0).
        self.bound_port: int | None = None

    async def scrape(self) -> bytes:
        """The exposition text: every worker's counters summed, this process's samples and
        the families this process's models defined (custom.py)."""
        stats = await self._observation.all_statistics()
        return render([*self._families(stats), *self._sampler.families(), *custom_families()])

    def _families(self, stats: list[ModelStats]) -> list[Family]:
        options = self.options
        histograms = options.histogram_latencies
        return [
            *inference_families(stats, options.counter_latencies),
            *cache_families(stats),
            *(latency_histograms(stats) if histograms else []),
            *protocol_families(stats, with_durations=histograms),
            batch_sizes(stats),
            state_gauge(self._repository.index()),
            *operation_counters(stats),
        ]

    async def start(self, tls: ssl.SSLContext | None = None) -> None:
        """Sample and open the metrics port; over TLS with ``tls`` (``ServerContext.ssl_context``)."""
        await asyncio.to_thread(self._sampler.start)
        self._sampling = asyncio.ensure_future(self._sample_forever())
        self._port = MetricsPort(self.scrape, self._admit)
        options = self.options
        self.bound_port = await self._port.start(options.address, options.port, options.shared_port, tls)

    async def stop(self) -> None:
        if self._port is not None:
            await self._port.close()
        if self._sampling is not None:
            self._sampling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sampling
        self._sampler.close()

    async def _sample_forever(self) -> None:
        while True:
            await asyncio.sleep(self.options.interval_s)
            try:
                self._sampler.sample()
            except Exception as error:  # noqa: BLE001 - a failed reading must not stop the next
                log.warning("metrics_sample_failed", error=f"{type(error).__name__}: {error}")
