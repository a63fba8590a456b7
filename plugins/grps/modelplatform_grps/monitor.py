"""Per-second request series for the monitor page, derived from the shared counters.

grps counts nothing of its own: once a second a sampler (``sampler.py``) hands
:meth:`Monitor.take` the statistics counters (``dataplane.observation.all_statistics``,
summed over workers), the same ones the statistics extension, the metrics and
the live page read. The monitor keeps the grps protocols' part of them
(``grps_http`` + ``grps_grpc``), per model name and in total (``*``), and
turns the change since the previous sample into one point per second: QPS,
failure rate, and latency avg (from the duration sums) and max/p50/p90/p99
(interpolated within the latency histogram's buckets, as Prometheus's
``histogram_quantile`` does). Latency is of successful requests, as the
shared histogram holds only those.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from modelplatform.statistics import ModelStats

ALL = "*"
#: The model name shown for requests refused before the server knew their model.
UNKNOWN = "(unknown)"
#: The request-scope protocols of grps traffic (HTTP, custom routes included, and gRPC).
GRPS_PROTOCOLS = ("grps_http", "grps_grpc")
PERCENTILES = (50, 90, 99)
PERCENTILES_Q = tuple(p / 100.0 for p in PERCENTILES)
KEYS = ["qps", "fail_rate", "latency_avg_ms", "latency_max_ms"]
KEYS += [f"latency_p{p}_ms" for p in PERCENTILES]


@dataclass(slots=True)
class Counts:
    """grps requests of one model version (or summed): outcomes and the successes' latency."""

    requests: int = 0
    failures: int = 0
    bounds: tuple[int, ...] = ()
    buckets: list[int] = field(default_factory=list)  # per bucket, not cumulative; last is +Inf
    sum_us: int = 0

    def add(self, other: Counts) -> None:
        self.requests += other.requests
        self.failures += other.failures
        if not self.bounds:
            self.bounds, self.buckets = other.bounds, [0] * len(other.buckets)
        if other.bounds == self.bounds:  # differ only across differently started workers
            self.buckets = [a + b for a, b in zip(self.buckets, other.buckets)]
            self.sum_us += other.sum_us

    def since(self, earlier: Counts | None) -> Counts:
        """What was counted after ``earlier``; all of it when the counters restarted (a reload)."""
        if earlier is None or earlier.bounds != self.bounds or earlier.requests > self.requests:
            return self
        return Counts(
            self.requests - earlier.requests,
            self.failures - earlier.failures,
            self.bounds,
            [now - before for now, before in zip(self.buckets, earlier.buckets)],
            self.sum_us - earlier.sum_us,
        )

    def point(self) -> list[float]:
        """One second's values, in :data:`KEYS` order."""
        if self.requests <= 0:
            return [0.0] * len(KEYS)
        successes = sum(self.buckets)
        latency = [0.0] * (2 + len(PERCENTILES))
        if successes:
            ms = [quantile(self.bounds, self.buckets, q) / 1000.0 for q in (1.0, *PERCENTILES_Q)]
            latency = [self.sum_us / successes / 1000.0, *ms]
        return [float(self.requests), 100.0 * self.failures / self.requests, *latency]


def quantile(bounds: tuple[int, ...], buckets: list[int], q: float) -> float:
    """The ``q`` quantile of a histogram, linear within its bucket (0 below the first bound).

    Observations past the last bound report that bound, as ``histogram_quantile``
    does; ``q`` = 1 is the upper bound of the highest bucket with observations.
    """
    total = sum(buckets)
    rank = q * total
    below = 0
    for index, count in enumerate(buckets):
        if count and below + count >= rank:
            if index >= len(bounds):
                return float(bounds[-1])
            lower = bounds[index - 1] if index else 0
            return lower + (bounds[index] - lower) * (rank - below) / count
        below += count
    return float(bounds[-1]) if bounds else 0.0


def grps_counts(stats: ModelStats) -> Counts:
    """The grps protocols' part of one version's counters."""
    counts = Counts()
    for protocol in GRPS_PROTOCOLS:
        seen = stats.protocols.get(protocol)
        if seen is not None:
            histogram = seen.duration
            counts.add(Counts(seen.success + seen.failure, seen.failure,
                              histogram.bounds, list(histogram.counts), histogram.sum))  # fmt: skip
    return counts


@dataclass(slots=True)
class _Second:
    epoch: int
    points: dict[str, list[float]]


class Monitor:
    """The last ``window_secs`` seconds of grps traffic; fed only by :meth:`take`."""

    def __init__(self, window_secs: int) -> None:
        self.window = window_secs
        self._seconds: deque[_Second] = deque(maxlen=window_secs)
        self._readings: dict[tuple[str, str], Counts] | None = None
        #: Requests and failures per model (and ``*``) as the counters held them at the last sample.
        self.totals: dict[str, list[int]] = {}
        #: When the last sample was taken (epoch seconds; 0 before the first).
        self.sampled_at = 0.0

    def take(self, stats: list[ModelStats], now: float) -> None:
        """One sample: the counters now; the change since the last one is the second just ended."""
        readings = {(s.name, s.version): grps_counts(s) for s in stats}
        if self._readings is not None:  # the first sample is only the baseline
            changes: dict[str, Counts] = {}
            for key, counts in readings.items():
                change = counts.since(self._readings.get(key))
                if change.requests:
                    for model in (key[0] or UNKNOWN, ALL):
                        changes.setdefault(model, Counts()).add(change)
            self._seconds.append(_Second(int(now) - 1, {m: c.point() for m, c in changes.items()}))
        self._readings = readings
        self.totals = _totals(readings)
        self.sampled_at = now

    def series(self, window: int, now: float) -> dict[str, Any]:
        """The last ``window`` whole seconds, every second present (zeros when idle)."""
        epochs = list(range(int(now) - max(1, min(window, self.window)), int(now)))
        by_epoch = {s.epoch: s for s in self._seconds}
        models = sorted({m for s in self._seconds for m in s.points} | set(self.totals))
        return {
            "interval_secs": 1,
            "timestamps": epochs,
            "models": {m: _model_series(m, epochs, by_epoch) for m in models},
        }

    def metrics(self, now: float) -> dict[str, Any]:
        """Totals as last sampled plus the last whole second, per model."""
        last = self.series(1, now)
        return {
            model: {
                "requests_total": total[0],
                "failures_total": total[1],
                **{k: v[-1] for k, v in last["models"].get(model, {}).items()},
            }
            for model, total in sorted(self.totals.items())
        }


def _totals(readings: dict[tuple[str, str], Counts]) -> dict[str, list[int]]:
    totals: dict[str, list[int]] = {}
    for (name, _), counts in readings.items():
        if counts.requests:
            for model in (name or UNKNOWN, ALL):
                total = totals.setdefault(model, [0, 0])
                total[0] += counts.requests
                total[1] += counts.failures
    return totals


def _model_series(model: str, epochs: list[int], by_epoch: dict[int, _Second]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {k: [] for k in KEYS}
    zeros = [0.0] * len(KEYS)
    for epoch in epochs:
        second = by_epoch.get(epoch)
        point = second.points.get(model, zeros) if second else zeros
        for key, value in zip(KEYS, point):
            out[key].append(round(value, 3))
    return out
