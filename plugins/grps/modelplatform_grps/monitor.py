"""Per-second request series for the monitor page, kept in a ring buffer.

Fed from the timings of the requests grps serves (HTTP and gRPC), per model
and in total (``*``): count, failures and a bounded latency sample per
second, from which QPS, failure rate and latency avg/max/p50/p90/p99 are
computed when someone asks (never on the request path).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ALL = "*"
#: Latency samples kept per model per second; beyond it counts stay exact.
SAMPLES_PER_SECOND = 1024
PERCENTILES = (50, 90, 99)


@dataclass(slots=True)
class _Cell:
    count: int = 0
    failures: int = 0
    total_ms: float = 0.0
    max_ms: float = 0.0
    samples: list[float] = field(default_factory=list)

    def add(self, ms: float, ok: bool) -> None:
        self.count += 1
        self.failures += 0 if ok else 1
        self.total_ms += ms
        self.max_ms = max(self.max_ms, ms)
        if len(self.samples) < SAMPLES_PER_SECOND:
            self.samples.append(ms)


@dataclass(slots=True)
class _Second:
    epoch: int
    cells: dict[str, _Cell] = field(default_factory=dict)


class Monitor:
    def __init__(self, window_secs: int) -> None:
        self.window = window_secs
        self._seconds: deque[_Second] = deque(maxlen=window_secs)
        self.totals: dict[str, list[int]] = {}

    def record(self, model: str, seconds: float, ok: bool) -> None:
        now = int(time.time())
        if not self._seconds or self._seconds[-1].epoch != now:
            self._seconds.append(_Second(now))
        cells = self._seconds[-1].cells
        ms = seconds * 1000.0
        for key in (model, ALL):
            cells.setdefault(key, _Cell()).add(ms, ok)
            total = self.totals.setdefault(key, [0, 0])
            total[0] += 1
            total[1] += 0 if ok else 1

    def series(self, window: int) -> dict[str, Any]:
        """The last ``window`` whole seconds, every second present (zeros when idle)."""
        now = int(time.time())
        epochs = list(range(now - max(1, min(window, self.window)), now))
        by_epoch = {s.epoch: s for s in self._seconds}
        models = sorted({m for s in self._seconds for m in s.cells} | set(self.totals))
        return {
            "interval_secs": 1,
            "timestamps": epochs,
            "models": {m: _model_series(m, epochs, by_epoch) for m in models},
        }

    def metrics(self) -> dict[str, Any]:
        """Totals since start plus the last whole second, per model."""
        last = self.series(1)
        return {
            model: {
                "requests_total": total[0],
                "failures_total": total[1],
                **{k: v[-1] for k, v in last["models"].get(model, {}).items()},
            }
            for model, total in sorted(self.totals.items())
        }


def _model_series(model: str, epochs: list[int], by_epoch: dict[int, _Second]) -> dict[str, list[float]]:
    keys = ["qps", "fail_rate", "latency_avg_ms", "latency_max_ms"] + [f"latency_p{p}_ms" for p in PERCENTILES]
    out: dict[str, list[float]] = {k: [] for k in keys}
    for epoch in epochs:
        second = by_epoch.get(epoch)
        cell = second.cells.get(model) if second else None
        for key, value in zip(keys, _point(cell)):
            out[key].append(value)
    return out


def _point(cell: _Cell | None) -> list[float]:
    if cell is None or cell.count == 0:
        return [0.0] * (4 + len(PERCENTILES))
    percentiles = np.percentile(np.asarray(cell.samples), PERCENTILES).tolist()
    return [
        float(cell.count),
        round(100.0 * cell.failures / cell.count, 3),
        round(cell.total_ms / cell.count, 3),
        round(cell.max_ms, 3),
        *(round(p, 3) for p in percentiles),
    ]
