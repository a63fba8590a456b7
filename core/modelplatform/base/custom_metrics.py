"""Metric families that model code defines (Triton's custom metrics), read by the metrics plugin.

Triton lets a model create counters, gauges and histograms at run time
(``pb_utils.MetricFamily`` in a python model, ``TRITONSERVER_MetricFamilyNew``
in C) and shows them on ``/metrics`` beside the server's own families. This
registry is that shared place: a backend adds families and metrics, the
metrics plugin reads a :meth:`CustomMetrics.snapshot` on every scrape.

Lifetimes follow Triton's: the model owns its objects. A metric is shown
while some :class:`CustomMetric` handle of it is alive (the registry holds
handles weakly), so a model that is unloaded and collected takes its
metrics off the page. Two handles with the same labels share one value, as
two ``Metric`` objects of one label set share one Prometheus child in
Triton. Every operation takes one lock: model threads write while the loop
scrapes. One registry per process (:func:`custom_metrics`), as Triton has
one per server process.
"""

from __future__ import annotations

import bisect
import math
import re
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from modelplatform.base.errors import AlreadyExists, InvalidArgument, Unsupported

COUNTER, GAUGE, HISTOGRAM = "counter", "gauge", "histogram"
KINDS = (COUNTER, GAUGE, HISTOGRAM)
#: The server's own families start so (nv_inference_count, ...): a model may not shadow them.
RESERVED_PREFIX = "nv_"
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")

LabelKey = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class MetricSample:
    """One metric of a family at scrape time: a value, or a histogram's counts."""

    labels: Mapping[str, str]
    value: float = 0.0
    #: A histogram's bucket bounds, and how many observations fell at or under each
    #: bound, cumulative, with the +Inf count last (one more entry than ``bounds``);
    #: ``value`` is then the sum of the observations. Empty for a counter or gauge.
    bounds: tuple[float, ...] = ()
    cumulative: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class FamilySnapshot:
    name: str
    kind: str
    description: str
    samples: tuple[MetricSample, ...]


class _Cell:
    """The value one label set holds, shared by every handle of those labels."""

    __slots__ = ("value", "bounds", "counts", "holders")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.value = 0.0  # a histogram's sum
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # per bucket, +Inf last; not cumulative
        self.holders: weakref.WeakSet[CustomMetric] = weakref.WeakSet()


class CustomFamily:
    """One family: a name, a kind and a description, and its metrics by label set."""

    def __init__(self, registry: CustomMetrics, name: str, description: str, kind: str) -> None:
        self._registry = registry
        self.name = name
        self.description = description
        self.kind = kind
        self._cells: dict[LabelKey, _Cell] = {}

    def metric(
        self, labels: Mapping[str, str] | None = None, buckets: Sequence[float] | None = None
    ) -> CustomMetric:
        """A handle on the metric of ``labels``; a histogram needs ``buckets``, the others refuse them."""
        key = _label_key(self.name, labels or {})
        bounds = self._bounds(buckets)
        with self._registry.lock:
            cell = self._cells.get(key)
            if cell is None or not cell.holders:
                cell = self._cells[key] = _Cell(bounds)
            elif cell.bounds != bounds:
                raise InvalidArgument(
                    f"metric family '{self.name}': labels {dict(key)} already have buckets {list(cell.bounds)}"
                )
            handle = CustomMetric(self, cell)
            cell.holders.add(handle)
            self._registry.changes += 1
        return handle

    def snapshot(self) -> FamilySnapshot:
        """Called with the registry's lock held."""
        samples = []
        for key, cell in list(self._cells.items()):
            if not cell.holders:
                del self._cells[key]  # every handle is gone: off the page, as in Triton
                continue
            samples.append(_sample(key, cell, self.kind == HISTOGRAM))
        return FamilySnapshot(self.name, self.kind, self.description, tuple(samples))

    def _bounds(self, buckets: Sequence[float] | None) -> tuple[float, ...]:
        if self.kind != HISTOGRAM:
            if buckets is not None:
                raise InvalidArgument(f"metric family '{self.name}': a {self.kind} takes no buckets")
            return ()
        if buckets is None:
            raise InvalidArgument(f"metric family '{self.name}': a histogram needs buckets")
        bounds = tuple(float(b) for b in buckets)
        if any(math.isnan(b) for b in bounds) or any(a >= b for a, b in zip(bounds, bounds[1:])):
            raise InvalidArgument(
                f"metric family '{self.name}': buckets {list(bounds)} must increase strictly"
            )
        return bounds


class CustomMetric:
    """A handle on one metric: Triton's increment / set / observe / value, by kind."""

    __slots__ = ("_family", "_cell", "__weakref__")

    def __init__(self, family: CustomFamily, cell: _Cell) -> None:
        self._family = family  # keeps the family alive while a metric of it is
        self._cell = cell

    @property
    def family(self) -> CustomFamily:
        return self._family

    def increment(self, value: float) -> None:
        """A counter by a non-negative amount, a gauge by any."""
        kind = self._refuse(HISTOGRAM, "increment")
        if kind == COUNTER and value < 0:
            raise InvalidArgument(
                f"counter '{self._family.name}' can only be incremented by non-negative values"
            )
        with self._family._registry.lock:
            self._cell.value += value
            self._family._registry.changes += 1

    def set(self, value: float) -> None:
        """A gauge only."""
        self._refuse(COUNTER, "set")
        self._refuse(HISTOGRAM, "set")
        with self._family._registry.lock:
            self._cell.value = float(value)
            self._family._registry.changes += 1

    def observe(self, value: float) -> None:
        """A histogram only: one observation, into the first bucket whose bound is >= it."""
        if self._family.kind != HISTOGRAM:
            raise Unsupported(f"a {self._family.kind} ('{self._family.name}') does not support observe")
        cell = self._cell
        with self._family._registry.lock:
            cell.counts[bisect.bisect_left(cell.bounds, value)] += 1
            cell.value += value
            self._family._registry.changes += 1

    def value(self) -> float:
        """A counter's or gauge's value (a histogram has none, as in Triton)."""
        self._refuse(HISTOGRAM, "value")
        with self._family._registry.lock:
            return self._cell.value

    def _refuse(self, kind: str, operation: str) -> str:
        if self._family.kind == kind:
            raise Unsupported(f"a {kind} ('{self._family.name}') does not support {operation}")
        return self._family.kind


class CustomMetrics:
    """Every family models defined in this process, by name, and what other processes published.

    A model running in a child process (a python process instance) has the
    child's registry; the child sends its :meth:`snapshot` along and the
    server :meth:`publish`-es it here under a name of its own, so a scrape
    of the server shows the sum of its own and its children's values.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._families: weakref.WeakValueDictionary[str, CustomFamily] = weakref.WeakValueDictionary()
        self._published: dict[str, tuple[FamilySnapshot, ...]] = {}
        #: Counts every change of a value or a family: a child sends a snapshot only after one.
        self.changes = 0

    def family(self, name: str, description: str, kind: str) -> CustomFamily:
        """The family ``name``: the live one when it matches, else a new one.

        A live family of that name with another kind or description is refused
        (ALREADY_EXISTS), as Prometheus refuses it.
        """
        _check_family(name, kind)
        with self.lock:
            found = self._families.get(name)
            if found is not None:
                if (found.kind, found.description) != (kind, description):
                    raise AlreadyExists(
                        f"metric family '{name}' already exists as a {found.kind} "
                        f"described '{found.description}'"
                    )
                return found
            made = CustomFamily(self, name, description, kind)
            self._families[name] = made
            return made

    def snapshot(self) -> list[FamilySnapshot]:
        """Every live family with its live metrics, and the published ones, summed, by name."""
        with self.lock:
            own = [f.snapshot() for f in self._families.values()]
            published = [family for families in self._published.values() for family in families]
        return merged([*own, *published])

    def publish(self, source: str, families: Sequence[FamilySnapshot]) -> None:
        """Show ``families`` (another process's snapshot) until ``source`` publishes again or withdraws."""
        with self.lock:
            self._published[source] = tuple(families)

    def withdraw(self, source: str) -> None:
        """``source`` is gone (its process ended): its values leave the page."""
        with self.lock:
            self._published.pop(source, None)


def _check_family(name: str, kind: str) -> None:
    if kind not in KINDS:
        raise InvalidArgument(f"metric family '{name}': kind must be one of {list(KINDS)}, got {kind!r}")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidArgument(f"metric family name {name!r} is not a Prometheus metric name")
    if name.startswith(RESERVED_PREFIX):
        raise InvalidArgument(f"metric family '{name}': names starting '{RESERVED_PREFIX}' are the server's")


def _label_key(family: str, labels: Mapping[str, str]) -> LabelKey:
    if not isinstance(labels, Mapping):
        raise InvalidArgument(f"metric family '{family}': labels must be a dictionary")
    for name in labels:
        if not isinstance(name, str) or not _LABEL.fullmatch(name) or name.startswith("__"):
            raise InvalidArgument(f"metric family '{family}': {name!r} is not a Prometheus label name")
    return tuple(sorted((name, str(value)) for name, value in labels.items()))


def _sample(key: LabelKey, cell: _Cell, histogram: bool) -> MetricSample:
    if not histogram:
        return MetricSample(dict(key), cell.value)
    running, cumulative = 0, []
    for count in cell.counts:
        running += count
        cumulative.append(running)
    return MetricSample(dict(key), cell.value, cell.bounds, tuple(cumulative))


def merged(families: Sequence[FamilySnapshot]) -> list[FamilySnapshot]:
    """Families of one name summed label set by label set (several processes' values), by name.

    A family whose kind differs from the first of its name, or a histogram
    whose buckets differ, is left out rather than added wrongly.
    """
    by_name: dict[str, FamilySnapshot] = {}
    samples: dict[str, dict[LabelKey, MetricSample]] = {}
    for family in families:
        first = by_name.setdefault(family.name, family)
        if first.kind != family.kind:
            continue
        into = samples.setdefault(family.name, {})
        for sample in family.samples:
            key = tuple(sorted(sample.labels.items()))
            into[key] = _sum(into[key], sample) if key in into else sample
    return [
        FamilySnapshot(name, by_name[name].kind, by_name[name].description, tuple(samples[name].values()))
        for name in sorted(by_name)
    ]


def _sum(a: MetricSample, b: MetricSample) -> MetricSample:
    if a.bounds != b.bounds:
        return a
    cumulative = tuple(x + y for x, y in zip(a.cumulative, b.cumulative))
    return MetricSample(a.labels, a.value + b.value, a.bounds, cumulative)


_PROCESS = CustomMetrics()


def custom_metrics() -> CustomMetrics:
    """This process's registry: where model code's families live and the metrics plugin reads."""
    return _PROCESS
