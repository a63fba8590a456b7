"""Per model-version counters and durations (Triton's statistics shape).

Updated on the request path with plain integer adds: no locks are needed in a
single event loop, and nothing here allocates per request beyond a dict
lookup for the batch size.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Duration:
    count: int = 0
    ns: int = 0

    def add(self, ns: int, count: int = 1) -> None:
        self.count += count
        self.ns += ns

    def to_json(self) -> dict[str, int]:
        return {"count": self.count, "ns": self.ns}


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
    batches: dict[int, Duration] = field(default_factory=dict)
    instances: dict[int, int] = field(default_factory=dict)
    #: Warmup runs (samples x count x instances) and the time the whole warmup took.
    warmup: Duration = field(default_factory=Duration)

    def record_success(self, request_ns: int, queue_ns: int = 0, rows: int = 1) -> None:
        """A request of ``rows`` inferences (its batch size, as Triton counts) finished.

        Its queue time is recorded here or by the scheduler.
        """
        self.durations["success"].add(request_ns)
        if queue_ns:
            self.durations["queue"].add(queue_ns)
        self.inference_count += rows
        self.last_inference_ms = time.time_ns() // 1_000_000

    def record_failure(self, request_ns: int) -> None:
        self.durations["fail"].add(request_ns)
        self.last_inference_ms = time.time_ns() // 1_000_000

    def record_queue(self, queue_ns: int, count: int = 1) -> None:
        """Time ``count`` requests waited for an instance or a batch."""
        self.durations["queue"].add(queue_ns, count)

    def record_execution(self, batch_size: int, infer_ns: int, instance: int = 0) -> None:
        self.execution_count += 1
        # Backends prepare inputs and outputs inside execute(): that time is in
        # compute_infer, and compute_input/output count the requests with 0 ns so
        # their counts agree with compute_infer's as clients expect.
        self.durations["compute_input"].add(0, batch_size)
        self.durations["compute_infer"].add(infer_ns, batch_size)
        self.durations["compute_output"].add(0, batch_size)
        self.batches.setdefault(batch_size, Duration()).add(infer_ns)
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
            for size, duration in part.batches.items():
                total.batches.setdefault(size, Duration()).add(duration.ns, duration.count)
            for index, count in part.instances.items():
                total.instances[index] = total.instances.get(index, 0) + count
            total.warmup.add(part.warmup.ns, part.warmup.count)
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
                {
                    "batch_size": size,
                    "compute_input": {"count": d.count, "ns": 0},
                    "compute_infer": d.to_json(),
                    "compute_output": {"count": d.count, "ns": 0},
                }
                for size, d in sorted(self.batches.items())
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
