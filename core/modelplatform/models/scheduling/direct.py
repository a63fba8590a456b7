"""The scheduler for models without dynamic batching: one request, one execute.

Instances are handed out from a queue of idle ones, so ``instance_group``
count N lets N requests execute at once and the (N+1)th waits its turn.
A request waits no longer than its deadline (deadlines.py): one past it
never reaches the backend and fails with the deadline's own error.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Sequence
from typing import Protocol

from modelplatform.base.deadlines import Deadline
from modelplatform.base.errors import Internal, ModelPlatformError
from modelplatform.base.inference import InferenceRequest, InferenceResponse
from modelplatform.base.observing import current_scope
from modelplatform.models.backend import Backend
from modelplatform.models.scheduling.instances import InstanceRing
from modelplatform.models.stats import ModelStats


class Scheduler(Protocol):
    async def submit(self, request: InferenceRequest) -> InferenceResponse:
        """Run one request on an instance (batched with others or not)."""
        ...

    def submit_now(self, request: InferenceRequest) -> InferenceResponse | None:
        """:meth:`submit` without awaiting, where an idle instance answers at once
        (``Backend.execute_now``); None, with nothing run or recorded, where it cannot."""
        ...

    def pick(self) -> tuple[int, Backend]:
        """The instance (and its index) for a stream or raw call, which bypasses ``submit``."""
        ...

    async def close(self) -> None: ...


class DirectScheduler:
    """Idle instances in a list; requests finding none wait in FIFO order.

    The common case (an idle instance) takes it without awaiting anything:
    no queue object, no task, no future per request. A finished request hands
    its instance straight to the oldest waiter still waiting.
    """

    def __init__(self, instances: Sequence[Backend], stats: ModelStats) -> None:
        self._idle: list[tuple[int, Backend]] = list(enumerate(instances))[::-1]
        self._waiters: deque[asyncio.Future[tuple[int, Backend]]] = deque()
        self._stats = stats
        self._ring = InstanceRing(instances)
        #: Whether any instance may answer at once: backends that never do cost nothing extra.
        self._answers_now = any(type(b).execute_now is not Backend.execute_now for b in instances)

    async def submit(self, request: InferenceRequest) -> InferenceResponse:
        deadline = request.deadline
        if self._idle and not self._waiters:
            index, instance = self._idle.pop()
        else:
            index, instance = await self._wait_for_instance(deadline)
        if deadline is not None and deadline.passed():
            self._release(index, instance)
            raise deadline.error()
        try:
            started = time.perf_counter_ns()
            results = await instance.execute([request])
            self._record(index, instance, request, started)
        finally:
            if self._waiters:
                self._release(index, instance)
            else:  # nobody waits (the common case): _release's own frame spared
                self._idle.append((index, instance))
        if len(results) == 1 and not isinstance(results[0], ModelPlatformError):
            return results[0]  # single_result's answer, without its frame
        return single_result(results)

    def submit_now(self, request: InferenceRequest) -> InferenceResponse | None:
        if not self._answers_now or not self._idle or self._waiters:
            return None
        deadline = request.deadline
        if deadline is not None and deadline.passed():
            return None  # submit answers it with the deadline's own error
        index, instance = self._idle.pop()
        try:
            started = time.perf_counter_ns()
            result = instance.execute_now(request)
            if result is None:
                return None
            self._record(index, instance, request, started)
        finally:
            self._idle.append((index, instance))  # nothing else ran meanwhile: nobody waits
        if isinstance(result, ModelPlatformError):
            raise result
        return result

    def pick(self) -> tuple[int, Backend]:
        return self._ring.next()

    async def close(self) -> None:
        return None

    async def _wait_for_instance(self, deadline: Deadline | None) -> tuple[int, Backend]:
        waiter: asyncio.Future[tuple[int, Backend]] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            if deadline is None:
                chosen = await waiter
            else:
                chosen = await asyncio.wait_for(waiter, deadline.remaining_s())
        except (asyncio.CancelledError, TimeoutError) as stopped:
            if waiter.done() and not waiter.cancelled():
                self._release(*waiter.result())  # handed over just as the client or deadline left
            if isinstance(stopped, TimeoutError) and deadline is not None:
                raise deadline.error() from None
            raise
        return chosen

    def _record(self, index: int, instance: Backend, request: InferenceRequest, started: int) -> None:
        """One execution's queue wait and phases, in the statistics and the request's trace."""
        queue_ns = started - (request.arrived_ns or started)
        self._stats.record_queue(queue_ns)
        input_ns, infer_ns, output_ns = instance.phases.split(started, time.perf_counter_ns())
        self._stats.record_execution(1, infer_ns, index, input_ns, output_ns)
        scope = current_scope.get()  # this runs in the request's task
        if scope is not None and scope.observed:
            scope.note_phases(queue_ns, input_ns, infer_ns, output_ns)

    def _release(self, index: int, instance: Backend) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result((index, instance))
                return
        self._idle.append((index, instance))


def single_result(results: Sequence[InferenceResponse | ModelPlatformError]) -> InferenceResponse:
    if len(results) != 1:
        raise Internal(f"backend returned {len(results)} results for 1 request")
    result = results[0]
    if isinstance(result, ModelPlatformError):
        raise result
    return result
