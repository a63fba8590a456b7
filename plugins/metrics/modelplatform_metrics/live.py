"""The live page's data: request totals by protocol, the models, and machine series.

Every count comes from the statistics counters (``dataplane.observation.all_statistics``,
summed over workers): the same numbers the statistics extension and the
Prometheus families show, never a count of its own. Once a second a task
keeps one point (cumulative requests by protocol, CPU, memory, GPUs) in a
bounded ring, so the page draws rates and machine series over the window;
``snapshot`` adds the totals as they are at the moment it is asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import structlog

from modelplatform import DataPlane
from modelplatform.statistics import ModelStats

from .system import SystemSampler

log = structlog.get_logger("modelplatform.metrics")

#: Seconds of history the page can draw (one point a second).
WINDOW_SECS = 300


@dataclass(frozen=True, slots=True)
class Totals:
    requests: int
    failures: int
    by_protocol: dict[str, int]

    @classmethod
    def of(cls, stats: list[ModelStats]) -> Totals:
        by_protocol: dict[str, int] = {}
        failures = 0
        for entry in stats:
            failures += entry.durations["fail"].count
            for protocol, counts in entry.protocols.items():
                by_protocol[protocol] = by_protocol.get(protocol, 0) + counts.success + counts.failure
        return cls(sum(by_protocol.values()), failures, dict(sorted(by_protocol.items())))


class LiveBoard:
    """Made once per server; samples between start-up and shutdown."""

    def __init__(self, dataplane: DataPlane) -> None:
        self._observation = dataplane.observation
        self._repository = dataplane.repository
        self._health = dataplane.health
        self._sampler = SystemSampler()
        self._points: deque[dict[str, Any]] = deque(maxlen=WINDOW_SECS)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await asyncio.to_thread(self._sampler.start)
        self._task = asyncio.ensure_future(self._sample_forever())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._sampler.close()

    async def snapshot(self) -> dict[str, Any]:
        """What the page shows: totals now, the models, and the sampled series."""
        totals = Totals.of(await self._observation.all_statistics())
        return {
            "server": {"name": self._health.server_name, "version": self._health.server_version},
            "time": time.time(),
            "requests": totals.requests,
            "failures": totals.failures,
            "protocols": totals.by_protocol,
            "models": self._models(),
            "series": list(self._points),
        }

    def _models(self) -> list[dict[str, str]]:
        return [
            {"name": e.name, "version": e.version, "state": e.state or "UNAVAILABLE", "reason": e.reason}
            for e in self._repository.index()
        ]

    async def _sample_forever(self) -> None:
        while True:
            try:
                await self._sample()
            except Exception as error:  # noqa: BLE001 - a failed reading must not stop the next
                log.warning("live_sample_failed", error=f"{type(error).__name__}: {error}")
            await asyncio.sleep(1.0)

    async def _sample(self) -> None:
        self._sampler.sample()
        totals = Totals.of(await self._observation.all_statistics())
        cpu = self._sampler.cpu
        self._points.append(
            {
                "t": int(time.time()),
                "requests": totals.by_protocol,
                "failures": totals.failures,
                "cpu": cpu.utilization if cpu else None,
                "memory_used": cpu.memory_used if cpu else None,
                "memory_total": cpu.memory_total if cpu else None,
                "gpus": [dict(gpu) for gpu in self._sampler.gpus],
            }
        )
