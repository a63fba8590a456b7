"""The custom-metrics registry (base/custom_metrics.py): Triton's rules per kind, lifetimes, merging."""

from __future__ import annotations

import gc
import pickle

import pytest

from modelplatform import AlreadyExists, InvalidArgument, Unsupported
from modelplatform.base.custom_metrics import CustomMetrics
from modelplatform.statistics import COUNTER, GAUGE, HISTOGRAM


def test_each_kind_allows_what_triton_allows() -> None:
    registry = CustomMetrics()
    counter = registry.family("c", "a counter", COUNTER).metric({"m": "x"})
    counter.increment(2.5)
    with pytest.raises(InvalidArgument, match="non-negative"):
        counter.increment(-1)
    with pytest.raises(Unsupported, match="set"):
        counter.set(3)
    with pytest.raises(Unsupported, match="observe"):
        counter.observe(3)
    assert counter.value() == 2.5
    gauge = registry.family("g", "a gauge", GAUGE).metric()
    gauge.set(5)
    gauge.increment(-2)
    assert gauge.value() == 3
    histogram = registry.family("h", "a histogram", HISTOGRAM).metric(buckets=[1, 10])
    for value in (0.5, 1, 5, 50):
        histogram.observe(value)
    with pytest.raises(Unsupported, match="value"):
        histogram.value()
    with pytest.raises(Unsupported, match="increment"):
        histogram.increment(1)
    (h,) = [f for f in registry.snapshot() if f.name == "h"]
    assert h.samples[0].cumulative == (2, 3, 4) and h.samples[0].value == 56.5  # le=1 holds 0.5 and 1


def test_families_and_labels_are_checked() -> None:
    registry = CustomMetrics()
    same = registry.family("f", "text", COUNTER)
    assert registry.family("f", "text", COUNTER) is same
    with pytest.raises(AlreadyExists):
        registry.family("f", "other text", COUNTER)
    with pytest.raises(InvalidArgument, match="server's"):
        registry.family("nv_inference_count", "mine", COUNTER)
    with pytest.raises(InvalidArgument, match="Prometheus metric name"):
        registry.family("bad-name", "x", COUNTER)
    with pytest.raises(InvalidArgument, match="label name"):
        same.metric({"bad-label": "v"})
    with pytest.raises(InvalidArgument, match="needs buckets"):
        registry.family("h", "x", HISTOGRAM).metric()
    with pytest.raises(InvalidArgument, match="no buckets"):
        same.metric(buckets=[1])
    with pytest.raises(InvalidArgument, match="increase strictly"):
        registry.family("h2", "x", HISTOGRAM).metric(buckets=[2, 1])


def test_handles_of_one_label_set_share_a_value_and_the_last_one_gone_removes_it() -> None:
    registry = CustomMetrics()
    family = registry.family("shared", "x", COUNTER)
    first, second = family.metric({"a": "1"}), family.metric({"a": "1"})
    first.increment(1)
    second.increment(2)
    assert first.value() == 3
    del first, second
    gc.collect()
    assert [f.samples for f in registry.snapshot() if f.name == "shared"] in ([], [()])


def test_published_snapshots_are_summed_with_the_own_and_withdrawn() -> None:
    child = CustomMetrics()
    kept = child.family("calls", "x", COUNTER).metric({"w": "c"})
    kept.increment(4)
    sent = pickle.loads(pickle.dumps(child.snapshot()))  # as it crosses the pipe
    server = CustomMetrics()
    own = server.family("calls", "x", COUNTER).metric({"w": "c"})
    own.increment(1)
    server.publish("child-1", sent)
    server.publish("child-2", sent)
    (calls,) = server.snapshot()
    assert calls.samples[0].value == 9
    server.withdraw("child-1")
    server.withdraw("child-2")
    assert server.snapshot()[0].samples[0].value == 1
    assert child.changes > 0
