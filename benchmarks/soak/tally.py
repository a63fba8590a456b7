"""Counts, latencies and examples of unexpected answers, per dialect.

A driver fills one :class:`Tally` and ships it as JSON every few seconds
(:meth:`Tally.take`); the run merges the pieces (:meth:`Tally.merge`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np

from soak.outcomes import GONE, KINDS, OK, Outcome

#: Distinct unexpected answers kept per dialect (counted beyond that, not kept).
MAX_EXAMPLES = 20
PERCENTILES = (50, 90, 99)


class Tally:
    def __init__(self) -> None:
        self.counts: dict[str, Counter[str]] = defaultdict(Counter)
        self.latencies_ms: dict[str, list[float]] = defaultdict(list)
        #: dialect -> "kind case: detail" -> count
        self.examples: dict[str, Counter[str]] = defaultdict(Counter)

    def record(self, dialect: str, case: str, outcome: Outcome, latency_ms: float) -> None:
        self.counts[dialect][outcome.kind] += 1
        self.latencies_ms[dialect].append(round(latency_ms, 3))
        if outcome.kind not in (OK, GONE):
            key = f"{outcome.kind} {case}: {outcome.detail}"
            kept = self.examples[dialect]
            if key in kept or len(kept) < MAX_EXAMPLES:
                kept[key] += 1

    def take(self) -> dict[str, Any]:
        """Everything recorded since the last take, as JSON-ready data; starts afresh."""
        piece = {"counts": self.counts, "latencies_ms": self.latencies_ms, "examples": self.examples}
        self.__init__()
        return piece

    def merge(self, piece: dict[str, Any]) -> None:
        for dialect, counts in piece["counts"].items():
            self.counts[dialect].update(counts)
        for dialect, latencies in piece["latencies_ms"].items():
            self.latencies_ms[dialect].extend(latencies)
        for dialect, examples in piece["examples"].items():
            self.examples[dialect].update(examples)

    def dialects(self) -> list[str]:
        return sorted(self.counts)

    def total(self, kind: str | None = None) -> int:
        return sum(c[kind] if kind else sum(c.values()) for c in self.counts.values())

    def requests(self, dialect: str) -> int:
        return sum(self.counts[dialect].values())

    def percentiles(self, dialect: str | None = None) -> tuple[float, ...]:
        """p50, p90, p99 in ms of one dialect, or of every request; NaN when none."""
        chosen = [self.latencies_ms[dialect]] if dialect else list(self.latencies_ms.values())
        values = np.concatenate([np.asarray(v, dtype=np.float64) for v in chosen]) if chosen else []
        if len(values) == 0:
            return tuple(float("nan") for _ in PERCENTILES)
        return tuple(float(v) for v in np.percentile(values, PERCENTILES))

    def summary(self) -> dict[str, Any]:
        """Per dialect: requests, every kind's count, p50/p90/p99 and the examples."""
        return {
            dialect: {
                "requests": self.requests(dialect),
                **{kind: self.counts[dialect][kind] for kind in KINDS},
                **{f"p{p}_ms": round(v, 2) for p, v in zip(PERCENTILES, self.percentiles(dialect))},
                "unexpected": dict(self.examples[dialect]),
            }
            for dialect in self.dialects()
        }
