"""Feeds the monitor from the shared counters once a second, off the request path.

An always-on timer rather than sampling only while the page is open: the page
shows the minutes before it was opened, and one read of the counters a second
(a pass over the loaded versions; with ``--workers N`` one ask of the
siblings) costs next to nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import structlog

from modelplatform import DataPlane

from .monitor import Monitor

log = structlog.get_logger("modelplatform.grps")
#: Past each whole second by this much, so the second just ended is complete.
OFFSET_SECS = 0.02


class MonitorSampler:
    def __init__(self, monitor: Monitor, dataplane: DataPlane) -> None:
        self._monitor = monitor
        self._observation = dataplane.observation
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._sample_forever())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _sample_forever(self) -> None:
        while True:
            try:
                asked = time.time()  # what is read is as of this moment or later (siblings answer later)
                self._monitor.take(await self._observation.all_statistics(), asked)
            except Exception as error:  # noqa: BLE001 - a failed reading must not stop the next
                log.warning("grps_monitor_sample_failed", error=f"{type(error).__name__}: {error}")
            await asyncio.sleep(1.0 - time.time() % 1.0 + OFFSET_SECS)
