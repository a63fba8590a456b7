"""Per model-version counters and durations (Triton's statistics shape).

The one source of counts: the statistics extension and the Prometheus metrics
(the metrics plugin) both read these objects. Updated on the request path with
plain integer adds, once per event: no locks are needed in a single event
loop, and nothing here allocates per request beyond a dict lookup for the
batch size.

Where the durations start and end (docs/observability.md has the table):
``queue`` runs from the request's arrival at the dataplane to its backend
call; ``compute_input``, ``compute_infer`` and ``compute_output`` split the
backend call at the marks the backend sets (:class:`modelplatform.PhaseClock`);
``success``/``fail`` are the whole request, arrival to answer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .observing import UNSCOPED, current_scope


@dataclass(slots=True)
class Duration:
    count: int = 0
    ns: int = 0

    def add(self, ns: int, count: int = 1) -> None:
        self.count += count
        self.ns += ns

    def to_json(self) -> dict[str, int]:
        return {"count": self.count, "ns": self.ns}


#: Triton's ``nv_inference_request_failure`` reasons: refused by the scheduler
#: (queue full, timed out waiting), cancelled (client gone, server draining),
#: failed in the backend, anything else (bad input, unknown version).
FAILURE_REASONS = ("REJECTED", "CANCELED", "BACKEND", "OTHER")

@dataclass(slots=True)
class BatchDurations:
    """The three compute phases of every execution of one batch size."""

    input: Duration = field(default_factory=Duration)
    infer: Duration = field(default_factory=Duration)
    output: Duration = field(default_factory=Duration)

    def add(self, input_ns: int, infer_ns: int, output_ns: int) -> None:
        self.input.add(input_ns)
        self.infer.add(infer_ns)
        self.output.add(output_ns)

    def include(self, other: BatchDurations) -> None:
        for mine, theirs in ((self.input, other.input), (self.infer, other.infer),
                             (self.output, other.output)):  # fmt: skip
            mine.add(theirs.ns, theirs.count)

    def to_json(self) -> dict[str, dict[str, int]]:
        return {
            "compute_input": self.input.to_json(),
            "compute_infer": self.infer.to_json(),
            "compute_output": self.output.to_json(),
        }


_INFERENCE_KEYS = (
    "success",
    "fail",
    "queue",
    "compute_input",
    "compute_infer",
    "compute_output",
    "cache_hit",
    "cache_miss",
)


@dataclass(slots=True)
class ModelStats:
    name: str
    version: str
    last_inference_ms: int = 0
    inference_count: int = 0
    execution_count: int = 0
    durations: dict[str, Duration] = field(
        default_factory=lambda: {key: Duration() for key in _INFERENCE_KEYS}
    )
    batches: dict[int, BatchDurations] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FAILURE_REASONS, 0))
    #: Requests in flight (queued or executing) when the counters were read: a gauge.
    pending: int = 0
    #: How long the version took to load, warmup included (0 until READY).
    load_ns: int = 0
    instances: dict[int, int] = field(default_factory=dict)
    #: Warmup runs (samples x count x instances) and the time the whole warmup took.
    warmup: Duration = field(default_factory=Duration)
    #: Requests (successes and failures) by the protocol they came in on (observing.py).
    protocols: dict[str, int] = field(default_factory=dict)

    def _count_protocol(self, ok: bool, reason: str = "", rows: int = 0) -> None:
        scope = current_scope.get()
        protocol = UNSCOPED if scope is None else scope.protocol
        self.protocols[protocol] = self.protocols.get(protocol, 0) + 1
        if scope is not None:
            scope.model, scope.version, scope.ok = self.name, self.version, ok
            scope.failure, scope.batch_size = reason, rows

    def record_success(self, request_ns: int, queue_ns: int = 0, rows: int = 1) -> None:
        """A request of ``rows`` inferences (its batch size, as Triton counts) finished.

        Its queue time is recorded here or by the scheduler.
        """
        self.durations["success"].add(request_ns)
        if queue_ns:
            self.durations["queue"].add(queue_ns)
        self.inference_count += rows
        self.last_inference_ms = time.time_ns() // 1_000_000
        self._count_protocol(True, rows=rows)

    def record_failure(self, request_ns: int, reason: str = "OTHER") -> None:
        """A request failed; ``reason`` is one of :data:`FAILURE_REASONS`."""
        self.durations["fail"].add(request_ns)
        self.failures[reason] += 1
        self.last_inference_ms = time.time_ns() // 1_000_000
        self._count_protocol(False, reason)

    def record_queue(self, queue_ns: int, count: int = 1) -> None:
        """Time ``count`` requests waited for an instance or a batch."""
        self.durations["queue"].add(queue_ns, count)

    def record_execution(
        self,
        batch_size: int,
        infer_ns: int,
        instance: int = 0,
        input_ns: int = 0,
        output_ns: int = 0,
    ) -> None:
        """One backend call of ``batch_size`` rows, split in its three phases.

        Like Triton, each request of the batch counts the whole batch's time.
        """
        self.execution_count += 1
        durations = self.durations
        durations["compute_input"].add(input_ns, batch_size)
        durations["compute_infer"].add(infer_ns, batch_size)
        durations["compute_output"].add(output_ns, batch_size)
        batch = self.batches.get(batch_size)
        if batch is None:
            batch = self.batches[batch_size] = BatchDurations()
        batch.add(input_ns, infer_ns, output_ns)
        self.instances[instance] = self.instances.get(instance, 0) + 1

    def record_warmup(self, ns: int, runs: int) -> None:
        self.warmup.add(ns, runs)

    def plus(self, other: ModelStats) -> ModelStats:
        """A new ModelStats: these counters plus ``other``'s (another worker's, same version)."""
        total = ModelStats(self.name, self.version)
        for part in (self, other):
            total.last_inference_ms = max(total.last_inference_ms, part.last_inference_ms)
            total.inference_count += part.inference_count
            total.execution_count += part.execution_count
            for key, duration in part.durations.items():
                total.durations.setdefault(key, Duration()).add(duration.ns, duration.count)
            for size, batch in part.batches.items():
                total.batches.setdefault(size, BatchDurations()).include(batch)
            for reason, count in part.failures.items():
                total.failures[reason] = total.failures.get(reason, 0) + count
            total.pending += part.pending
            total.load_ns = max(total.load_ns, part.load_ns)  # each worker loads its own copy
            for index, count in part.instances.items():
                total.instances[index] = total.instances.get(index, 0) + count
            total.warmup.add(part.warmup.ns, part.warmup.count)
            for protocol, count in part.protocols.items():
                total.protocols[protocol] = total.protocols.get(protocol, 0) + count
        return total

    def to_json(self) -> dict[str, Any]:
        """Triton's ``model_stats`` entry; every key perf_analyzer reads is present."""
        return {
            "name": self.name,
            "version": self.version,
            "last_inference": self.last_inference_ms,
            "inference_count": self.inference_count,
            "execution_count": self.execution_count,
            "inference_stats": {k: d.to_json() for k, d in self.durations.items()},
            "response_stats": {},
            "batch_stats": [
                {"batch_size": size, **batch.to_json()} for size, batch in sorted(self.batches.items())
            ],
            "memory_usage": [],
            # Not in Triton's shape (clients ignore unknown keys; gRPC drops it):
            # executions per instance_group instance, to see them share the load.
            "instance_stats": [
                {"instance": index, "execution_count": count}
                for index, count in sorted(self.instances.items())
            ],
            # Also ours: the load's warmup (runs and ns), which inference_stats leave out.
            "warmup_stats": self.warmup.to_json(),
        }
