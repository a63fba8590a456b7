"""The scheduler for backends whose ``execute`` may run many requests at once.

An ensemble's ``execute`` only awaits other models, which queue and batch on
their own; making its requests take turns on one instance would serialize
every pipeline behind the slowest. So each request calls ``execute`` at
once on the next instance (round-robin) and waits for nothing here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from modelplatform.base.inference import InferenceRequest, InferenceResponse
from modelplatform.models.backend import Backend
from modelplatform.models.scheduling.direct import single_result
from modelplatform.models.scheduling.instances import InstanceRing
from modelplatform.models.stats import ModelStats


class ConcurrentScheduler:
    """Every request straight to ``execute``; no queue, so no queue time."""

    def __init__(self, instances: Sequence[Backend], stats: ModelStats) -> None:
        self._stats = stats
        self._ring = InstanceRing(instances)

    async def submit(self, request: InferenceRequest) -> InferenceResponse:
        deadline = request.deadline
        if deadline is not None and deadline.passed():
            raise deadline.error()
        index, instance = self._ring.next()
        started = time.perf_counter_ns()
        self._stats.record_queue(0)
        results = await instance.execute([request])
        self._stats.record_execution(1, time.perf_counter_ns() - started, index)
        return single_result(results)

    def submit_now(self, request: InferenceRequest) -> InferenceResponse | None:
        return None  # its instances await other models (ensembles): never at once

    def pick(self) -> tuple[int, Backend]:
        return self._ring.next()

    async def close(self) -> None:
        return None
