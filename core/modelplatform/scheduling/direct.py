"""The scheduler for models without dynamic batching: one request, one execute.

Instances are handed out from a queue of idle ones, so ``instance_group``
count N lets N requests execute at once and the (N+1)th waits its turn.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Protocol

from ..backend import Backend
from ..errors import Internal, ModelPlatformError
from ..inference import InferenceRequest, InferenceResponse
from ..stats import ModelStats


class Scheduler(Protocol):
    async def submit(self, request: InferenceRequest) -> InferenceResponse: ...

    async def close(self) -> None: ...


class DirectScheduler:
    def __init__(self, instances: Sequence[Backend], stats: ModelStats) -> None:
        self._idle: asyncio.Queue[tuple[int, Backend]] = asyncio.Queue()
        for index, instance in enumerate(instances):
            self._idle.put_nowait((index, instance))
        self._stats = stats

    async def submit(self, request: InferenceRequest) -> InferenceResponse:
        waited = time.perf_counter_ns()
        index, instance = await self._idle.get()
        self._stats.record_queue(time.perf_counter_ns() - waited)
        try:
            started = time.perf_counter_ns()
            results = await instance.execute([request])
            self._stats.record_execution(1, time.perf_counter_ns() - started, index)
        finally:
            self._idle.put_nowait((index, instance))
        return _single(results)

    async def close(self) -> None:
        return None


def _single(results: Sequence[InferenceResponse | ModelPlatformError]) -> InferenceResponse:
    if len(results) != 1:
        raise Internal(f"backend returned {len(results)} results for 1 request")
    result = results[0]
    if isinstance(result, ModelPlatformError):
        raise result
    return result
