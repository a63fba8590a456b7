"""``pb_utils.MetricFamily`` and its ``Metric``: Triton's custom metrics API for python models.

A thin face over the core's registry (``modelplatform.statistics.custom_metrics``)
that the metrics plugin prints on ``/metrics``. Written from the python
backend's documented interface: ``MetricFamily(name, description, kind)``
with ``kind`` one of ``MetricFamily.COUNTER`` / ``GAUGE`` / ``HISTOGRAM``, and
``family.Metric(labels=None, buckets=None)`` (buckets for a histogram only);
a metric has ``increment``, ``set``, ``observe`` and ``value``, each refused
where Triton refuses it (a counter never goes down or is set, a histogram has
no value). Every refusal raises ``TritonModelException`` with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelplatform import ModelPlatformError
from modelplatform.statistics import COUNTER, GAUGE, HISTOGRAM, CustomMetric, custom_metrics

from .triton_errors import TritonModelException

_KINDS = (COUNTER, GAUGE, HISTOGRAM)


class Metric:
    """One metric of a family (one label set): made by :meth:`MetricFamily.Metric`."""

    def __init__(self, handle: CustomMetric) -> None:
        self._handle = handle

    def increment(self, value: float) -> None:
        _call(self._handle.increment, value)

    def set(self, value: float) -> None:
        _call(self._handle.set, value)

    def observe(self, value: float) -> None:
        _call(self._handle.observe, value)

    def value(self) -> float:
        return float(_call(self._handle.value))


class MetricFamily:
    """A named family of one kind; its metrics are shown on /metrics while the model holds them."""

    COUNTER, GAUGE, HISTOGRAM = range(3)  # Triton's MetricKind values

    def __init__(self, name: str, description: str, kind: int) -> None:
        if kind not in (self.COUNTER, self.GAUGE, self.HISTOGRAM):
            raise TritonModelException(
                f"metric family '{name}': kind must be MetricFamily.COUNTER, GAUGE or HISTOGRAM"
            )
        self._family = _call(custom_metrics().family, name, description, _KINDS[kind])

    def Metric(
        self, labels: Mapping[str, str] | None = None, buckets: Sequence[float] | None = None
    ) -> Metric:
        if labels is not None and not isinstance(labels, Mapping):
            raise TritonModelException("Failed to create metric. Labels must be a dictionary.")
        if buckets is not None and not isinstance(buckets, (list, tuple)):
            raise TritonModelException("Failed to create metric. Buckets must be a list.")
        return Metric(_call(self._family.metric, labels, buckets))


def _call(operation: Any, *args: Any) -> Any:
    """The registry's refusal as the exception Triton's utilities raise."""
    try:
        return operation(*args)
    except ModelPlatformError as error:
        raise TritonModelException(error.message) from None
