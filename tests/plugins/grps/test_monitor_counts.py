"""grps's monitor reads the shared counters: its totals are the statistics' grps counts,
and they change only when the sampler reads the counters, never on the request path."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import grpc
import pytest

from modelplatform.testing import ServerProcess
from modelplatform_grps.monitor import quantile
from modelplatform_grps.protos import grps_pb2_grpc
from modelplatform_grps.protos.grps_pb2 import GrpsMessage

from .conftest import call, call_json, make_repository

PREDICT = "/grps/v1/infer/predict"
SAMPLE = re.compile(r"^modelplatform_requests\{([^}]*)\} ([0-9.e+]+)$", re.M)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server of its own: the counts of other tests' traffic stay out."""
    repository = make_repository(tmp_path_factory.mktemp("monitor") / "models")
    with ServerProcess("--model-repository", str(repository)) as running:
        yield running


@pytest.fixture(scope="module")
def stub(server: ServerProcess) -> Iterator[grps_pb2_grpc.GrpsServiceStub]:
    with grpc.insecure_channel(server.grpc_url) as channel:
        yield grps_pb2_grpc.GrpsServiceStub(channel)


def _monitor(server: ServerProcess) -> dict:
    status, body = call_json(server, "GET", "/grps/v1/monitor/metrics", content_type=None)
    assert status == 200
    return body


def _sampled_after(server: ServerProcess, moment: float) -> dict:
    """The monitor once the sampler has read the counters after ``moment`` (it does so every second)."""
    deadline = time.time() + 30
    while time.time() < deadline:
        body = _monitor(server)
        if body["sampled_at"] > moment:
            return body
        time.sleep(0.2)
    raise AssertionError("the monitor was not sampled within 30 s")


def _grps_requests(server: ServerProcess) -> dict[tuple[str, str], int]:
    """``modelplatform_requests`` of the grps protocols by (model, outcome), from /metrics."""
    status, _, text = call(server, "GET", "/metrics", content_type=None)
    assert status == 200
    counts: dict[tuple[str, str], int] = {}
    for labels, value in SAMPLE.findall(text.decode()):
        label = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if label["protocol"] in ("grps_http", "grps_grpc"):
            key = (label["model"], label["outcome"])
            counts[key] = counts.get(key, 0) + int(float(value))
    return counts


def _predict_http(server: ServerProcess, count: int) -> None:
    for index in range(count):
        status, _ = call_json(server, "POST", f"{PREDICT}?model=identity_bytes", {"str_data": str(index)})
        assert status == 200


def test_totals_equal_the_statistics_grps_counts(
    server: ServerProcess, stub: grps_pb2_grpc.GrpsServiceStub
) -> None:
    _predict_http(server, 4)
    for _ in range(3):
        assert stub.Predict(GrpsMessage(model="identity_bytes", str_data="g")).status.code == 200
    failing = GrpsMessage(model="stream_fail")
    failing.gmap.s_i32["COUNT"] = 1
    assert list(stub.PredictStreaming(failing))[-1].status.code == 500  # a failure the dataplane counts
    oip = {"inputs": [{"name": "INPUT0", "datatype": "BYTES", "shape": [1], "data": ["o"]}]}
    assert call_json(server, "POST", "/v2/models/identity_bytes/infer", oip)[0] == 200  # not grps traffic
    sent = time.time()

    monitor = _sampled_after(server, sent)["models"]
    counted = _grps_requests(server)
    identity = counted.get(("identity_bytes", "success"), 0) + counted.get(("identity_bytes", "failure"), 0)
    assert identity == 7
    assert monitor["identity_bytes"]["requests_total"] == 7
    assert monitor["stream_fail"] == monitor["stream_fail"] | {"requests_total": 1, "failures_total": 1}
    assert monitor["*"]["requests_total"] == sum(counted.values()) == 8
    failed = sum(count for (_, outcome), count in counted.items() if outcome == "failure")
    assert monitor["*"]["failures_total"] == failed == 1


def test_totals_change_only_when_the_sampler_reads(server: ServerProcess) -> None:
    """Requests between two samples leave the totals as they were: nothing counts on the request path."""
    unchanged = 0
    for _ in range(10):
        before = _sampled_after(server, _monitor(server)["sampled_at"])  # just after a sample
        _predict_http(server, 3)
        after = _monitor(server)
        if after["sampled_at"] != before["sampled_at"]:
            continue  # the sampler ran in between: try again
        assert after["models"] == before["models"]
        unchanged += 1
        if unchanged == 2:
            break
    assert unchanged >= 1, "the sampler ran between every pair of reads"
    grown = _sampled_after(server, time.time())["models"]["identity_bytes"]["requests_total"]
    assert grown >= before["models"]["identity_bytes"]["requests_total"] + 3


def test_series_hold_the_traffic_of_the_second_it_was_counted_in(server: ServerProcess) -> None:
    _predict_http(server, 5)
    sent = time.time()
    _sampled_after(server, sent)
    status, series = call_json(server, "GET", "/grps/v1/monitor/series?window=300", content_type=None)
    assert status == 200
    model = series["models"]["identity_bytes"]
    # The module's whole traffic fits in 300 s, and the first sample (at start-up) saw none.
    assert sum(model["qps"]) == _monitor(server)["models"]["identity_bytes"]["requests_total"]
    busy = [i for i, qps in enumerate(model["qps"]) if qps]
    assert all(model["latency_avg_ms"][i] > 0 for i in busy)
    for i in busy:  # interpolated percentiles are ordered and bounded by the estimated max
        p50, p90, p99, top = (model[f"latency_{key}_ms"][i] for key in ("p50", "p90", "p99", "max"))
        assert p50 <= p90 <= p99 <= top


def test_quantile_interpolates_within_its_bucket() -> None:
    bounds = (100, 200, 400)
    assert quantile(bounds, [0, 4, 0, 0], 0.5) == 150.0  # halfway through the (100, 200] bucket
    assert quantile(bounds, [2, 2, 0, 0], 0.25) == 50.0  # the first bucket starts at 0
    assert quantile(bounds, [0, 1, 1, 0], 1.0) == 400.0  # the max is the highest used bucket's bound
    assert quantile(bounds, [0, 0, 0, 3], 0.99) == 400.0  # past the last bound: that bound


def test_totals_are_summed_over_workers(tmp_path) -> None:
    """With --workers 2 the requests land on both; whichever worker answers the monitor counts them all."""
    repository = make_repository(tmp_path / "models")
    with ServerProcess("--model-repository", str(repository), "--workers", "2") as workers:
        _wait_both_ready(workers)
        _predict_http(workers, 30)
        sent = time.time()
        for _ in range(4):  # several connections: the answers come from either worker
            totals = _sampled_after(workers, sent)["models"]["*"]
            assert totals["requests_total"] == sum(_grps_requests(workers).values()) == 30


def _wait_both_ready(server: ServerProcess) -> None:
    """Until reads on fresh connections (either worker) all answer ready: the second may still start."""
    deadline = time.time() + 90
    while time.time() < deadline:
        if {call(server, "GET", "/grps/v1/health/ready", content_type=None)[0] for _ in range(8)} == {200}:
            return
        time.sleep(0.2)
    raise AssertionError(server.log()[-3000:])
