"""Triton's sequence batcher: stateful models, every request of a sequence on one slot, in order.

A sequence (one ``sequence_id``) begins with a request flagged
``sequence_start`` and takes a *slot*: a position on one backend instance
(``max_batch_size`` positions per instance for ``direct``,
``max_candidate_sequences`` for ``oldest``, one for a model that does not
batch). Its later requests go to that slot only, one at a time and in the
order they arrived, with control inputs (sequence_controls.py) telling the
model where the sequence stands. The request flagged ``sequence_end`` frees
the slot once it ran; so does ``max_sequence_idle_microseconds`` without a
request (an abandoned sequence: it is forgotten, and its next request is
refused as one that did not START).

Each instance has one worker task (made at load; nothing is spawned per
request) that runs a batch at a time, so a sequence never has two requests
in the backend at once:

- ``direct``: the head request of every busy slot, each at its slot's
  position; a free position below the highest busy one holds a filler whose
  READY control is false (its answer is dropped), as Triton does.
- ``oldest``: the oldest head requests of different sequences, up to
  ``max_batch_size``, waiting up to ``max_queue_delay_microseconds`` for a
  preferred size.

What a client controls is bounded: live sequences by the slots (and by
:data:`MAX_LIVE_SEQUENCES`, whatever ``max_batch_size`` says), new
sequences waiting for a slot by :data:`MAX_WAITING_SEQUENCES` and by
:attr:`SequenceBatcher.slot_wait_s` each, queued requests by
:data:`MAX_QUEUED_REQUESTS`; each request also by its own deadline.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import structlog

from modelplatform.base.errors import Internal, InvalidArgument, ModelPlatformError, QueueFull, Unavailable
from modelplatform.base.inference import InferenceRequest, InferenceResponse, Tensor
from modelplatform.base.model_config import DEFAULT_QUEUE_SIZE, ModelConfig, SequenceBatching
from modelplatform.base.observing import RequestScope, current_scope
from modelplatform.models.backend import Backend
from modelplatform.models.scheduling.instances import InstanceRing
from modelplatform.models.scheduling.sequence_controls import SequenceControls
from modelplatform.models.scheduling.sequence_ids import SequenceId, sequence_flags
from modelplatform.models.stats import ModelStats

log = structlog.get_logger("modelplatform.models.scheduling.sequence")

#: Requests queued in one model's sequences, all together.
MAX_QUEUED_REQUESTS = DEFAULT_QUEUE_SIZE
#: New sequences waiting for a free slot.
MAX_WAITING_SEQUENCES = DEFAULT_QUEUE_SIZE
#: Live sequences of one model version, whatever its slots add up to (each holds memory of its own).
MAX_LIVE_SEQUENCES = 65536

Slot = tuple[int, int]  # (position, instance): a heap of free slots hands out low positions first


@dataclass(eq=False, slots=True)
class _Pending:
    request: InferenceRequest
    future: asyncio.Future[InferenceResponse]
    sequence: _Sequence
    end: bool
    arrived_ns: int
    #: In a batch handed to the backend: its deadline no longer applies.
    taken: bool = False
    cancelled: bool = False
    scope: RequestScope | None = None

    def live(self) -> bool:
        return not (self.cancelled or self.future.done())

    def fail(self, error: ModelPlatformError) -> None:
        if not (self.taken or self.future.done()):
            self.future.set_exception(error)


@dataclass(eq=False, slots=True)
class _Sequence:
    id: SequenceId
    queue: deque[_Pending] = field(default_factory=deque)
    slot: Slot | None = None
    running: bool = False
    #: ``loop.time()`` of its last request's arrival or answer: idleness counts from there.
    last_seen: float = 0.0
    #: The idle timer while it holds a slot, the slot-wait timer while it waits for one.
    timer: asyncio.TimerHandle | None = None


class SequenceBatcher:
    #: How long a new sequence waits for a free slot before it is refused (seconds).
    slot_wait_s: float = 30.0

    def __init__(self, config: ModelConfig, instances: Sequence[Backend], stats: ModelStats) -> None:
        assert config.sequence_batching is not None
        policy: SequenceBatching = config.sequence_batching
        self._policy = policy
        self._model = config.name
        self._loop = asyncio.get_running_loop()
        self._batching = config.batching
        self._max_rows = max(1, config.max_batch_size)
        self._per_instance = _slots_per_instance(policy, config)
        self._slots_total = min(self._per_instance * len(instances), MAX_LIVE_SEQUENCES)
        self._opened = 0  # slots handed out at least once; the rest are opened lazily
        self._free: list[Slot] = []
        self._busy: list[dict[int, _Sequence]] = [{} for _ in instances]
        self._live: dict[SequenceId, _Sequence] = {}
        self._waiting: deque[_Sequence] = deque()
        self._queued = 0
        self._idle_s = policy.max_sequence_idle_us / 1e6
        self._delay_s = policy.max_queue_delay_us / 1e6
        self._controls = SequenceControls(config.name, policy.controls, config.batching)
        self._control_names = frozenset(c.input_name for c in policy.controls)
        #: Control tensors the config also declares as inputs: the batcher's value replaces the client's.
        self._overridden = self._control_names & {spec.name for spec in config.inputs}
        self._stats = stats
        self._ring = InstanceRing(instances)
        self._work_ready = [asyncio.Event() for _ in instances]
        self._workers = [self._loop.create_task(self._work(i, b)) for i, b in enumerate(instances)]

    # -- requests ----------------------------------------------------------------------------

    async def submit(self, request: InferenceRequest) -> InferenceResponse:
        pending = self._enqueue(request)
        deadline = request.deadline
        timer = None
        if deadline is not None:
            timer = self._loop.call_later(deadline.remaining_s(), self._expired, pending)
        try:
            return await pending.future
        except asyncio.CancelledError:
            pending.cancelled = True  # the worker skips it; nothing runs for a gone client
            if pending.sequence.slot is None:
                self._abandon_waiting(
                    pending.sequence, Unavailable("the client left while waiting for a slot")
                )
            raise
        finally:
            if timer is not None:
                timer.cancel()

    def _enqueue(self, request: InferenceRequest) -> _Pending:
        flags = sequence_flags(request.parameters)
        if flags.id in (0, ""):
            raise InvalidArgument(
                f"inference request to model '{self._model}' must specify a non-zero or non-empty correlation ID"
            )
        if self._batching and (not request.inputs or request.inputs[0].shape[:1] != (1,)):
            raise InvalidArgument(
                f"inference request to model '{self._model}' must specify batch-size 1 "
                "due to requirements of sequence batcher"
            )
        if self._queued >= MAX_QUEUED_REQUESTS:
            raise QueueFull(self._model, self._queued)
        sequence = self._sequence_for(flags.id, flags.start)
        inputs = request.inputs
        if self._overridden:
            inputs = [t for t in inputs if t.name not in self._overridden]
        request.inputs = [*inputs, *self._controls.tensors(flags.id, flags.start, flags.end)]
        pending = _Pending(request, self._loop.create_future(), sequence, flags.end, _arrived(request))
        scope = current_scope.get()
        if scope is not None and scope.observed:  # a tracer will read what the batch measures
            pending.scope = scope
        sequence.queue.append(pending)
        sequence.last_seen = self._loop.time()
        self._queued += 1
        if flags.end:  # a later request with this id begins a new sequence (Triton forgets it too)
            self._forget(sequence)
        if sequence.slot is not None:
            self._work_ready[sequence.slot[1]].set()
        return pending

    def _sequence_for(self, sequence_id: SequenceId, start: bool) -> _Sequence:
        sequence = self._live.get(sequence_id)
        if sequence is not None:
            if start:  # Triton's answer to a conflict: the sequence restarts in its slot
                log.warning("sequence_restarted", model=self._model, sequence_id=sequence_id)
            return sequence
        if not start:
            raise InvalidArgument(
                f"inference request for sequence {sequence_id} to model '{self._model}' "
                "must specify the START flag on the first request of the sequence"
            )
        return self._open(sequence_id)

    def _open(self, sequence_id: SequenceId) -> _Sequence:
        slot = self._free_slot()
        if slot is None and len(self._waiting) >= MAX_WAITING_SEQUENCES:
            raise Unavailable(
                f"model '{self._model}' has no free sequence slot and {len(self._waiting)} sequences waiting"
            )
        sequence = _Sequence(sequence_id)
        self._live[sequence_id] = sequence
        if slot is not None:
            self._assign(sequence, slot)
        else:
            self._waiting.append(sequence)
            sequence.timer = self._loop.call_later(self.slot_wait_s, self._slot_wait_over, sequence)
        return sequence

    def _expired(self, pending: _Pending) -> None:
        deadline = pending.request.deadline
        assert deadline is not None
        pending.fail(deadline.error())
        if pending.sequence.slot is None:
            self._abandon_waiting(pending.sequence, deadline.error())

    # -- slots -------------------------------------------------------------------------------

    def _free_slot(self) -> Slot | None:
        if self._free:
            return heapq.heappop(self._free)
        if self._opened < self._slots_total:
            position, instance = divmod(self._opened, len(self._busy))
            self._opened += 1
            return position, instance
        return None

    def _assign(self, sequence: _Sequence, slot: Slot) -> None:
        sequence.slot = slot
        self._busy[slot[1]][slot[0]] = sequence
        self._arm_idle(sequence, self._idle_s)
        if sequence.queue:
            self._work_ready[slot[1]].set()

    def _release(self, sequence: _Sequence) -> None:
        """The sequence ended or was abandoned: its slot goes to the oldest waiting sequence."""
        slot = sequence.slot
        if slot is None:
            return
        sequence.slot = None
        if sequence.timer is not None:
            sequence.timer.cancel()
            sequence.timer = None
        self._forget(sequence)
        del self._busy[slot[1]][slot[0]]
        self._drop(sequence.queue, Unavailable(f"sequence {sequence.id} of model '{self._model}' has ended"))
        while self._waiting:
            waiting = self._waiting.popleft()
            if waiting.queue or self._live.get(waiting.id) is waiting:
                if waiting.timer is not None:
                    waiting.timer.cancel()
                self._assign(waiting, slot)
                return
        heapq.heappush(self._free, slot)

    def _forget(self, sequence: _Sequence) -> None:
        if self._live.get(sequence.id) is sequence:
            del self._live[sequence.id]

    def _slot_wait_over(self, sequence: _Sequence) -> None:
        sequence.timer = None
        error = Unavailable(
            f"inference request for sequence {sequence.id} to model '{self._model}' found no free "
            f"sequence slot within {self.slot_wait_s:g} s"
        )
        self._abandon_waiting(sequence, error)

    def _abandon_waiting(self, sequence: _Sequence, error: ModelPlatformError) -> None:
        """A sequence that never got a slot is dropped whole: its START can no longer run first."""
        if sequence.slot is not None or sequence not in self._waiting:
            return
        self._waiting.remove(sequence)
        if sequence.timer is not None:
            sequence.timer.cancel()
            sequence.timer = None
        self._forget(sequence)
        self._drop(sequence.queue, error)

    def _drop(self, queue: deque[_Pending], error: ModelPlatformError) -> None:
        while queue:
            queue.popleft().fail(error)
            self._queued -= 1

    def _arm_idle(self, sequence: _Sequence, after_s: float) -> None:
        if sequence.timer is not None:
            sequence.timer.cancel()
        sequence.timer = self._loop.call_later(after_s, self._check_idle, sequence)

    def _check_idle(self, sequence: _Sequence) -> None:
        sequence.timer = None
        if sequence.slot is None:
            return
        if sequence.running or any(p.live() for p in sequence.queue):
            self._arm_idle(sequence, self._idle_s)
            return
        idle_for = self._loop.time() - sequence.last_seen
        if idle_for < self._idle_s:
            self._arm_idle(sequence, self._idle_s - idle_for)
            return
        if self._live.get(sequence.id) is sequence:  # an ended sequence whose END never ran is quiet here
            log.warning(
                "sequence_idle_ended", model=self._model, sequence_id=sequence.id, idle_s=round(idle_for, 3)
            )
        self._release(sequence)

    # -- batches -----------------------------------------------------------------------------

    async def _work(self, index: int, instance: Backend) -> None:
        ready = self._work_ready[index]
        while True:
            ready.clear()  # before counting: a wake-up from here on is not lost
            if not self._ready_count(index):
                await ready.wait()
                continue
            await self._gather(index)
            batch = self._take(index)
            if any(p is not None for p in batch):
                await self._run(index, instance, batch)

    def _ready_count(self, index: int) -> int:
        """Busy slots of this instance whose sequence has a request to run; dead heads are dropped."""
        count = 0
        for sequence in list(self._busy[index].values()):  # a release below reassigns slots
            queue = sequence.queue
            while queue and not queue[0].live():
                dropped = queue.popleft()
                self._queued -= 1
                if dropped.end and not queue and not sequence.running:
                    self._release(sequence)  # its END will never run
                    break
            if queue:
                count += 1
        return count

    async def _gather(self, index: int) -> None:
        """Wait for a fuller batch until the oldest waiting request has waited the queue delay."""
        if not self._delay_s:
            return
        ready = self._work_ready[index]
        while True:
            ready.clear()
            count = self._ready_count(index)
            if not count or self._enough(count):
                return
            oldest = min(s.queue[0].arrived_ns for s in self._busy[index].values() if s.queue)
            remaining = self._delay_s - (time.perf_counter_ns() - oldest) / 1e9
            if remaining <= 0:
                return
            try:
                await asyncio.wait_for(ready.wait(), remaining)
            except TimeoutError:
                return

    def _enough(self, count: int) -> bool:
        if self._policy.strategy == "oldest":
            return count >= self._max_rows or count in self._policy.preferred_batch_sizes
        return count / self._per_instance >= self._policy.minimum_slot_utilization

    def _take(self, index: int) -> list[_Pending | None]:
        """The batch: ``direct`` by slot position (None: a filler), ``oldest`` by arrival."""
        self._ready_count(index)  # drops heads whose client left or whose deadline passed
        heads = [(position, s.queue[0]) for position, s in self._busy[index].items() if s.queue]
        if self._policy.strategy == "oldest":
            heads.sort(key=lambda head: head[1].arrived_ns)
            chosen: list[_Pending | None] = [p for _, p in heads[: self._max_rows]]
        else:
            chosen = [None] * (max(position for position, _ in heads) + 1) if heads else []
            for position, pending in heads:
                chosen[position] = pending
        for taken in chosen:
            if taken is not None:
                taken.sequence.queue.popleft()
                taken.sequence.running = True
                taken.taken = True
                self._queued -= 1
        return chosen

    async def _run(self, index: int, instance: Backend, batch: list[_Pending | None]) -> None:
        real = [p for p in batch if p is not None]
        template = real[0].request
        requests = [p.request if p is not None else self._filler(template) for p in batch]
        started = time.perf_counter_ns()
        for pending in real:
            self._stats.record_queue(started - pending.arrived_ns)
        try:
            results: Sequence[InferenceResponse | ModelPlatformError] = await instance.execute(requests)
        except Exception as error:  # noqa: BLE001 - every waiter must get an answer
            results = [_as_error(error)] * len(batch)
        input_ns, infer_ns, output_ns = instance.phases.split(started, time.perf_counter_ns())
        self._stats.record_execution(len(real), infer_ns, index, input_ns, output_ns)
        if len(results) != len(batch):
            wrong = Internal(f"backend returned {len(results)} results for {len(batch)} requests")
            results = [wrong] * len(batch)
        for entry, result in zip(batch, results):
            if entry is not None:
                self._answer(entry, result, started, (input_ns, infer_ns, output_ns))

    def _answer(
        self,
        pending: _Pending,
        result: InferenceResponse | ModelPlatformError,
        started: int,
        phases: tuple[int, ...],
    ) -> None:
        sequence = pending.sequence
        sequence.running = False
        sequence.last_seen = self._loop.time()
        if pending.scope is not None:
            pending.scope.note_phases(started - pending.arrived_ns, *phases)
        if not pending.future.done():
            if isinstance(result, ModelPlatformError):
                pending.future.set_exception(result)
            else:
                pending.future.set_result(result)
        if pending.end and not sequence.queue:
            self._release(sequence)

    def _filler(self, template: InferenceRequest) -> InferenceRequest:
        """An empty ``direct`` position: the template's shapes, zero data, READY false."""
        inputs = [_zeros(t) for t in template.inputs if t.name not in self._control_names]
        inputs += self._controls.tensors(0, start=False, end=False, ready=False)
        return InferenceRequest(template.model_name, inputs, template.model_version)

    # -- the scheduler protocol ----------------------------------------------------------------

    def submit_now(self, request: InferenceRequest) -> InferenceResponse | None:
        return None  # a request joins its sequence's queue and slot

    def pick(self) -> tuple[int, Backend]:
        """Raw calls bypass sequences: they take the next instance in turn."""
        return self._ring.next()

    async def close(self) -> None:
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        unloading = Unavailable("model is unloading")
        for sequence in [*self._live.values(), *self._waiting, *(s for b in self._busy for s in b.values())]:
            if sequence.timer is not None:
                sequence.timer.cancel()
            self._drop(sequence.queue, unloading)


def _slots_per_instance(policy: SequenceBatching, config: ModelConfig) -> int:
    if not config.batching:
        return 1
    if policy.strategy == "oldest" and policy.candidate_sequences:
        return policy.candidate_sequences
    return config.max_batch_size


def _arrived(request: InferenceRequest) -> int:
    return request.arrived_ns or time.perf_counter_ns()


def _zeros(tensor: Tensor) -> Tensor:
    if tensor.datatype == "BYTES":
        data = np.full(tensor.shape, b"", dtype=object)
    else:
        data = np.zeros(tensor.shape, dtype=tensor.data.dtype)
    return Tensor(tensor.name, tensor.datatype, tensor.shape, data)


def _as_error(error: BaseException) -> ModelPlatformError:
    if isinstance(error, ModelPlatformError):
        return error
    return Internal(f"{type(error).__name__}: {error}")
