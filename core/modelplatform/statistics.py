"""The statistics sub-API: for plugins that read or shape a server's statistics.

``dataplane.observation.statistics()`` answers :class:`ModelStats` objects (Triton's
statistics shape, plus latency histograms); the metrics plugin turns them
into Prometheus families and grps into its own documents. A plugin that
sets the latency histogram bounds does it for one server, from its
``configure`` hook, before models load::

    from modelplatform.statistics import set_latency_buckets

    @hookimpl
    def configure(server):
        set_latency_buckets(server, (100, 1_000, 10_000))

Families that model code defines at run time (Triton's custom metrics:
``pb_utils.MetricFamily``) live in the process's :func:`custom_metrics`
registry: a backend creates them there, the metrics plugin shows a
``custom_metrics().snapshot()`` on every scrape.

Everything here is public and documented in docs/plugins/hooks.md; the rest
of the statistics code is private to the core.
"""

from __future__ import annotations

from collections.abc import Iterable

from modelplatform.base.custom_metrics import (
    COUNTER,
    GAUGE,
    HISTOGRAM,
    CustomFamily,
    CustomMetric,
    FamilySnapshot,
    MetricSample,
    custom_metrics,
)
from modelplatform.dataplane.context import ServerContext
from modelplatform.models.stats import (
    DEFAULT_LATENCY_BUCKETS_US,
    LatencyBuckets,
    ModelStats,
    checked_buckets,
)


def set_latency_buckets(server: ServerContext, bounds_us: Iterable[int]) -> None:
    """The bounds (microseconds) of ``server``'s latency histograms.

    Call it from the ``configure`` hook: every version loaded afterwards
    takes them, and versions already loaded keep theirs. Another server in
    the same process keeps its own. ValueError unless :func:`checked_buckets`
    accepts ``bounds_us``.
    """
    server.shared(LatencyBuckets, _not_composed).set(bounds_us)


def _not_composed() -> LatencyBuckets:
    raise RuntimeError("set_latency_buckets needs a composed server's context (call it from `configure`)")


__all__ = [
    "COUNTER",
    "DEFAULT_LATENCY_BUCKETS_US",
    "GAUGE",
    "HISTOGRAM",
    "CustomFamily",
    "CustomMetric",
    "FamilySnapshot",
    "MetricSample",
    "ModelStats",
    "checked_buckets",
    "custom_metrics",
    "set_latency_buckets",
]
