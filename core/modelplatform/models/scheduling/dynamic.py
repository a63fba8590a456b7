"""Triton's dynamic batcher: requests from every protocol coalesce into one execute.

One queue per model version with a FIFO per priority level (priority.py; the
``priority`` request parameter picks the level), each bounded by its queue
policy's ``max_queue_size``: a full level answers UNAVAILABLE. Each backend
instance has a worker task that takes the request served next (the highest
level's oldest), then gathers queued requests of the same signature (input
names, datatypes and non-batch dims), in serving order, until the batch holds
``max_batch_size`` rows, reaches a preferred size, or
``max_queue_delay_microseconds`` has passed since that request arrived. A
request whose deadline (deadlines.py: the ``timeout`` parameter under its
level's queue policy, or the transport's) passes while queued fails alone, at
that moment, with the deadline's error; under ``timeout_action: DELAY`` its
queue timeout only moves it behind its level's other requests. Once in a batch
it runs. Workers are created once, at load time; nothing is spawned per request.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from modelplatform.base.deadlines import asked_timeout_us, queue_timeout_us, requested_priority
from modelplatform.base.errors import Internal, ModelPlatformError, Unavailable
from modelplatform.base.inference import InferenceRequest, InferenceResponse
from modelplatform.base.model_config import DELAY, DynamicBatching, ModelConfig
from modelplatform.base.observing import RequestScope, current_scope
from modelplatform.models.backend import Backend
from modelplatform.models.scheduling.instances import InstanceRing
from modelplatform.models.scheduling.priority import PriorityQueue
from modelplatform.models.stats import ModelStats

Signature = tuple[tuple[str, str, tuple[int, ...]], ...]


@dataclass(eq=False, slots=True)
class _Pending:
    request: InferenceRequest
    future: asyncio.Future[InferenceResponse]
    rows: int
    signature: Signature
    enqueued_ns: int
    #: When the request reached the dataplane: its queue time starts there.
    arrived_ns: int
    #: Its priority level (DynamicBatching.level_of).
    level: int = 0
    cancelled: bool = field(default=False)
    #: In a batch handed to the backend: its deadline no longer applies.
    taken: bool = field(default=False)
    #: The request's scope (observing.py): the worker task runs outside the request's context.
    scope: RequestScope | None = None

    def expire(self) -> None:
        """The deadline passed: fail now unless a worker already took it."""
        if not (self.taken or self.future.done()):
            assert self.request.deadline is not None
            self.future.set_exception(self.request.deadline.error())


class DynamicBatcher:
    def __init__(self, config: ModelConfig, instances: Sequence[Backend], stats: ModelStats) -> None:
        assert config.dynamic_batching is not None
        self._policy: DynamicBatching = config.dynamic_batching
        self._max_rows = max(1, config.max_batch_size)
        self._preferred = frozenset(self._policy.preferred_batch_sizes)
        self._delay_ns = self._policy.max_queue_delay_us * 1000
        self._queue: PriorityQueue[_Pending] = PriorityQueue(self._policy)
        self._arrived = asyncio.Event()
        self._stats = stats
        self._ring = InstanceRing(instances)
        self._workers = [
            asyncio.get_running_loop().create_task(self._work(index, instance))
            for index, instance in enumerate(instances)
        ]

    async def submit(self, request: InferenceRequest) -> InferenceResponse:
        pending = self._pending(request)
        self._queue.push(pending, request.model_name)
        self._arrived.set()
        timers = self._timers(pending)
        try:
            return await pending.future
        except asyncio.CancelledError:
            pending.cancelled = True  # a worker skips it; nothing runs for a gone client
            raise
        finally:
            for timer in timers:
                timer.cancel()

    def _timers(self, pending: _Pending) -> list[asyncio.TimerHandle]:
        """Fail the request at its deadline; under DELAY, move it back at its queue timeout."""
        loop, timers = asyncio.get_running_loop(), []
        deadline = pending.request.deadline
        if deadline is not None:
            timers.append(loop.call_later(deadline.remaining_s(), pending.expire))
        policy = self._policy.policy_for(pending.level)
        if policy.timeout_action == DELAY:
            delay_us = queue_timeout_us(asked_timeout_us(pending.request.parameters), policy)
            if delay_us:
                timers.append(loop.call_later(delay_us / 1e6, self._queue.delay, pending))
        return timers

    def submit_now(self, request: InferenceRequest) -> InferenceResponse | None:
        return None  # a request waits for the batch it may join

    def pick(self) -> tuple[int, Backend]:
        """Streams and raw calls are not batched: they take the next instance in turn."""
        return self._ring.next()

    async def close(self) -> None:
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        for pending in self._queue.clear():
            if not pending.future.done():
                pending.future.set_exception(Unavailable("model is unloading"))

    def _pending(self, request: InferenceRequest) -> _Pending:
        future = asyncio.get_running_loop().create_future()
        now = time.perf_counter_ns()
        arrived = request.arrived_ns or now
        level = self._policy.level_of(requested_priority(request.parameters))
        pending = _Pending(request, future, _rows(request), _signature(request), now, arrived, level)
        scope = current_scope.get()
        if scope is not None and scope.observed:  # a tracer will read what the batch measures
            pending.scope = scope
        return pending

    async def _work(self, index: int, instance: Backend) -> None:
        while True:
            batch = await self._next_batch()
            if batch:
                await self._run(index, instance, batch)

    async def _next_batch(self) -> list[_Pending]:
        while not self._queue:
            self._arrived.clear()
            await self._arrived.wait()
        first = self._queue.first()
        wait_until = first.enqueued_ns + self._delay_ns
        while self._delay_ns and not self._full(first):
            remaining = (wait_until - time.perf_counter_ns()) / 1e9
            if remaining <= 0:
                break
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), remaining)
            except TimeoutError:
                break
        return self._take(first.signature)

    def _full(self, first: _Pending) -> bool:
        rows = sum(p.rows for p in self._queue if p.signature == first.signature)  # every level
        return rows >= self._max_rows or rows in self._preferred

    def _take(self, signature: Signature) -> list[_Pending]:
        """Pop compatible live requests, in serving order, up to max_batch_size rows;
        others keep their place."""
        batch: list[_Pending] = []
        rows = 0
        for queue in self._queue.deques():
            kept: deque[_Pending] = deque()
            while queue:
                pending = queue.popleft()
                if pending.cancelled or pending.future.done():
                    continue
                deadline = pending.request.deadline
                if deadline is not None and deadline.passed():  # its timer has not run yet
                    pending.expire()
                    continue
                if pending.signature != signature or rows + pending.rows > self._max_rows:
                    kept.append(pending)
                    continue
                pending.taken = True
                batch.append(pending)
                rows += pending.rows
            queue.extend(kept)
        return batch

    async def _run(self, index: int, instance: Backend, batch: list[_Pending]) -> None:
        started = time.perf_counter_ns()
        for pending in batch:  # one observation each: the queue histogram is per request
            self._stats.record_queue(started - pending.arrived_ns)
        try:
            results = await instance.execute([p.request for p in batch])
        except Exception as error:  # noqa: BLE001 - every waiter must get an answer
            results = [_as_error(error)] * len(batch)
        input_ns, infer_ns, output_ns = instance.phases.split(started, time.perf_counter_ns())
        rows = sum(p.rows for p in batch)
        self._stats.record_execution(rows, infer_ns, index, input_ns, output_ns)
        for pending in batch:
            if pending.scope is not None:
                pending.scope.note_phases(started - pending.arrived_ns, input_ns, infer_ns, output_ns)
        if len(results) != len(batch):
            results = [Internal(f"backend returned {len(results)} results for {len(batch)} requests")] * len(
                batch
            )
        for pending, result in zip(batch, results):
            if pending.future.done():
                continue
            if isinstance(result, ModelPlatformError):
                pending.future.set_exception(result)
            else:
                pending.future.set_result(result)


def _rows(request: InferenceRequest) -> int:
    return request.inputs[0].shape[0] if request.inputs and request.inputs[0].shape else 1


def _signature(request: InferenceRequest) -> Signature:
    return tuple(sorted((t.name, t.datatype, tuple(t.shape[1:])) for t in request.inputs))


def _as_error(error: BaseException) -> ModelPlatformError:
    if isinstance(error, ModelPlatformError):
        return error
    return Internal(f"{type(error).__name__}: {error}")
