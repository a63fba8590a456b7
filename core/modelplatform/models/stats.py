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

Latency histograms (request, queue and the three compute phases, in
microseconds), a batch-size histogram and per-protocol counts sit beside the
counters. A :class:`Histogram` is a preallocated list of ints: an
observation is one ``bisect`` and two integer adds, no lock, no allocation.
Their bucket bounds belong to one server (:class:`LatencyBuckets`, owned by
its model manager and set at start-up by the metrics plugin from
``--metrics-config``), read when a version's counters are created: two
servers in one process keep their own.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from modelplatform.base.observing import UNSCOPED, current_scope


@dataclass(slots=True)
class Duration:
    count: int = 0
    ns: int = 0

    def add(self, ns: int, count: int = 1) -> None:
        self.count += count
        self.ns += ns

    def to_json(self) -> dict[str, int]:
        return {"count": self.count, "ns": self.ns}


#: Latency histogram bounds (upper bounds, microseconds) unless ``--metrics-config`` sets others:
#: 50 us to 10 s, roughly 1-2.5-5 per decade, so one set fits a CPU toy model and a large LLM.
DEFAULT_LATENCY_BUCKETS_US: tuple[int, ...] = (
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000,
    100_000, 250_000, 500_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000,
)  # fmt: skip
#: Batch-size histogram bounds (rows per backend execution): powers of two.
BATCH_SIZE_BUCKETS: tuple[int, ...] = tuple(2**k for k in range(11))
#: The most buckets a histogram may have (a bound on what ``--metrics-config`` may ask).
MAX_BUCKETS = 64


def checked_buckets(bounds: Iterable[int]) -> tuple[int, ...]:
    """``bounds`` as histogram bounds; ValueError unless 1 to :data:`MAX_BUCKETS`
    strictly increasing positive integers."""
    checked = tuple(int(b) for b in bounds)
    if not checked or len(checked) > MAX_BUCKETS:
        raise ValueError(f"between 1 and {MAX_BUCKETS} bucket bounds are needed, not {len(checked)}")
    if checked[0] <= 0 or any(later <= earlier for earlier, later in zip(checked, checked[1:])):
        raise ValueError("bucket bounds must be positive and strictly increasing")
    return checked


class LatencyBuckets:
    """One server's latency histogram bounds, owned by its model manager.

    Set at start-up, before models load (the metrics plugin does, from its
    ``configure`` hook through ``modelplatform.statistics.set_latency_buckets``);
    read once when a version's counters are created, so the request path
    pays nothing for it.
    """

    def __init__(self) -> None:
        self.bounds_us: tuple[int, ...] = DEFAULT_LATENCY_BUCKETS_US

    def set(self, bounds_us: Iterable[int]) -> None:
        """See :func:`checked_buckets`; versions loaded before keep the bounds they have."""
        self.bounds_us = checked_buckets(bounds_us)

    def new_stats(self, name: str, version: str) -> ModelStats:
        """Counters for ``name``/``version`` whose latency histograms have these bounds."""
        return ModelStats(name, version, latency_buckets_us=self.bounds_us)


@dataclass(slots=True)
class Histogram:
    """Counts per bucket (not cumulative; the last is +Inf) and the sum of observations."""

    bounds: tuple[int, ...]
    counts: list[int] = field(default_factory=list)
    sum: int = 0

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, value: int) -> None:
        """One observation: the first bucket whose bound is >= ``value`` (Prometheus's ``le``)."""
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[int]:
        """Prometheus's bucket values: observations <= each bound, then <= +Inf."""
        total, running = [], 0
        for count in self.counts:
            running += count
            total.append(running)
        return total

    def include(self, other: Histogram) -> None:
        """Add another worker's observations (same bounds: the same settings)."""
        if other.bounds != self.bounds:
            return  # bounds differ only if workers were started differently: not summable
        for index, count in enumerate(other.counts):
            self.counts[index] += count
        self.sum += other.sum


def latency_histogram() -> Histogram:
    return Histogram(DEFAULT_LATENCY_BUCKETS_US)


#: The phases with a latency histogram: the ``durations`` keys they share a name with.
HISTOGRAM_PHASES = ("request", "queue", "compute_input", "compute_infer", "compute_output")


@dataclass(slots=True)
class ProtocolStats:
    """One protocol's requests of one version: outcomes and the successful ones' latency."""

    duration: Histogram = field(default_factory=latency_histogram)
    success: int = 0
    failure: int = 0

    def include(self, other: ProtocolStats) -> None:
        self.success += other.success
        self.failure += other.failure
        self.duration.include(other.duration)


#: Outcomes of loads and unloads.
OUTCOMES = ("success", "failure")

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
    #: Latency histograms in microseconds, by phase (:data:`HISTOGRAM_PHASES`): request
    #: and queue observe each request, the compute phases each backend execution.
    #: Made with ``latency_buckets_us`` when not given.
    histograms: dict[str, Histogram] = field(default_factory=dict)
    #: Rows per backend execution.
    batch_sizes: Histogram = field(default_factory=lambda: Histogram(BATCH_SIZE_BUCKETS))
    #: Requests by the protocol they came in on: the request scope's (observing.py),
    #: which the transport edge opened; ``other`` for calls no edge scoped.
    protocols: dict[str, ProtocolStats] = field(default_factory=dict)
    #: Loads and unloads of the model by outcome; kept on the model's own entry (version "").
    loads: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    unloads: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    #: The bounds of every latency histogram here: the server's (:class:`LatencyBuckets`).
    latency_buckets_us: tuple[int, ...] = DEFAULT_LATENCY_BUCKETS_US
    #: The version answers from the server's response cache (``durations`` cache_hit/cache_miss).
    response_cache: bool = False

    def __post_init__(self) -> None:
        if not self.histograms:
            self.histograms = {phase: Histogram(self.latency_buckets_us) for phase in HISTOGRAM_PHASES}

    def record_success(self, request_ns: int, queue_ns: int = 0, rows: int = 1) -> None:
        """A request of ``rows`` inferences (its batch size, as Triton counts) finished.

        Its queue time is recorded here or by the scheduler. Counted under the
        protocol of the request scope it runs in, which learns the outcome.
        """
        # Duration.add and Histogram.observe spelled out here and in the two records below:
        # these run on every request, and in a busy server each Python call there costs the
        # event loop several times its hot-loop time (docs/performance.md, issue 32, seventh
        # session: 65 calls fewer per request took 26 µs off the loop).
        success = self.durations["success"]
        success.count += 1
        success.ns += request_ns
        request_us = request_ns // 1000
        histogram = self.histograms["request"]
        histogram.counts[bisect_left(histogram.bounds, request_us)] += 1
        histogram.sum += request_us
        if queue_ns:
            self.record_queue(queue_ns)
        self.inference_count += rows
        self.last_inference_ms = time.time_ns() // 1_000_000
        by_protocol = self._ended(rows, "")
        by_protocol.success += 1
        histogram = by_protocol.duration
        histogram.counts[bisect_left(histogram.bounds, request_us)] += 1
        histogram.sum += request_us

    def record_failure(self, request_ns: int, reason: str = "OTHER", protocol: str = "") -> None:
        """A request failed; ``reason`` is one of :data:`FAILURE_REASONS`; ``protocol``
        names the transport when no request scope is set (an edge refusing a call)."""
        self.durations["fail"].add(request_ns)
        self.failures[reason] += 1
        self.last_inference_ms = time.time_ns() // 1_000_000
        self._ended(0, reason, protocol).failure += 1

    def _ended(self, rows: int, failure: str, protocol: str = "") -> ProtocolStats:
        """The counters of the current request's protocol; its scope learns what ended."""
        scope = current_scope.get()
        if scope is None:
            protocol = protocol or UNSCOPED
        else:
            protocol = protocol or scope.protocol
            if scope.observed:  # a quiet scope is shared: nobody reads it, nothing is written
                scope.ended(self.name, self.version, rows, failure)
            elif scope.twin is not None:  # ... but the edge must learn that the call was counted:
                current_scope.set(scope.twin)  # its counted twin (observing.py), once per call
        by_protocol = self.protocols.get(protocol)
        if by_protocol is None:  # the first request of a protocol (names come from plugins)
            by_protocol = self.protocols[protocol] = ProtocolStats(Histogram(self.latency_buckets_us))
        return by_protocol

    def record_queue(self, queue_ns: int, count: int = 1) -> None:
        """Time ``count`` requests waited for an instance or a batch, ``queue_ns`` in all.

        The histogram gets the mean once per request: schedulers that know each
        request's own wait call this once per request.
        """
        queue = self.durations["queue"]
        queue.count += count
        queue.ns += queue_ns
        histogram = self.histograms["queue"]
        if count == 1:  # what the schedulers call: no loop on the request path
            queue_us = queue_ns // 1000
            histogram.counts[bisect_left(histogram.bounds, queue_us)] += 1
            histogram.sum += queue_us
            return
        for _ in range(count):
            histogram.observe(queue_ns // count // 1000)

    def record_cache_hit(self, lookup_ns: int) -> None:
        """A request answered from the response cache (its inference is not counted)."""
        self.durations["cache_hit"].add(lookup_ns)

    def record_cache_miss(self, ns: int) -> None:
        """A request the response cache did not hold: its lookup and insertion time."""
        self.durations["cache_miss"].add(ns)

    def record_load(self, succeeded: bool) -> None:
        self.loads[OUTCOMES[not succeeded]] += 1

    def record_unload(self, succeeded: bool) -> None:
        self.unloads[OUTCOMES[not succeeded]] += 1

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
        batch = self.batches.get(batch_size)
        if batch is None:
            batch = self.batches[batch_size] = BatchDurations()
        self.instances[instance] = self.instances.get(instance, 0) + 1
        durations, histograms = self.durations, self.histograms
        for phase, of_batch, ns in (
            ("compute_input", batch.input, input_ns),
            ("compute_infer", batch.infer, infer_ns),
            ("compute_output", batch.output, output_ns),
        ):  # the adds and observations spelled out (record_success says why)
            total = durations[phase]
            total.count += batch_size
            total.ns += ns
            of_batch.count += 1
            of_batch.ns += ns
            histogram, us = histograms[phase], ns // 1000
            histogram.counts[bisect_left(histogram.bounds, us)] += 1
            histogram.sum += us
        sizes = self.batch_sizes
        sizes.counts[bisect_left(sizes.bounds, batch_size)] += 1
        sizes.sum += batch_size

    def record_warmup(self, ns: int, runs: int) -> None:
        self.warmup.add(ns, runs)

    def plus(self, other: ModelStats) -> ModelStats:
        """A new ModelStats: these counters plus ``other``'s (another worker's, same version)."""
        # The same bounds as these counters (those in force when they were created).
        total = ModelStats(self.name, self.version, latency_buckets_us=self.latency_buckets_us)
        total.histograms = {phase: Histogram(h.bounds) for phase, h in self.histograms.items()}
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
            total.response_cache = total.response_cache or part.response_cache
            total._include_distributions(part)
        return total

    def _include_distributions(self, part: ModelStats) -> None:
        """Histograms and protocol counts add up; loads and unloads do not: every worker
        applies every load, so the most any worker counted is the number of operations."""
        for phase, histogram in part.histograms.items():
            self.histograms[phase].include(histogram)
        self.batch_sizes.include(part.batch_sizes)
        for protocol, counts in part.protocols.items():
            counted = self.protocols.get(protocol)
            if counted is None:
                counted = self.protocols[protocol] = ProtocolStats(Histogram(counts.duration.bounds))
            counted.include(counts)
        for mine, theirs in ((self.loads, part.loads), (self.unloads, part.unloads)):
            for outcome, count in theirs.items():
                mine[outcome] = max(mine.get(outcome, 0), count)

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
