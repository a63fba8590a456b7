"""Beyond Triton (issue 15 point 3) against a real server: latency and batch-size histograms,
per-protocol families over six dialect/transport pairs, the model state gauge, and load and
unload counters; scrapes parsed with prometheus-client."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import grpc
import numpy as np
import pytest

from modelplatform.testing import ServerProcess
from modelplatform_grps.protos import grps_pb2, grps_pb2_grpc
from modelplatform_tfserving.protos import services_pb2_grpc as services
from modelplatform_tfserving.protos import serving_apis_pb2 as apis
from modelplatform_tfserving.protos import tensorflow_pb2 as tf

from ...conftest import MODEL_REPOSITORY
from .scraping import (
    BAD_INPUT,
    GRPS_BODY,
    OIP_BODY,
    TFS_BODY,
    Samples,
    call,
    dashboard_queries,
    metric_names,
    oip_grpc_infer,
    scrape,
    value,
)

SIMPLE = {"model": "simple", "version": "1"}
PHASES = ("request", "queue", "compute_input", "compute_infer", "compute_output")
#: Successful requests per protocol the traffic fixture sends to simple.
SENT = {
    "oip_http": 3,
    "oip_grpc": 2,
    "tfserving_rest": 2,
    "tfserving_grpc": 1,
    "grps_http": 2,
    "grps_grpc": 1,
}
BATCHED_CALLS = 24


def _tfs_grpc(server: ServerProcess) -> None:
    request = apis.PredictRequest(model_spec=apis.ModelSpec(name="simple"))
    for name in ("INPUT0", "INPUT1"):
        proto = request.inputs[name]
        proto.dtype = tf.DT_INT32
        proto.tensor_shape.dim.add(size=1)
        proto.tensor_shape.dim.add(size=16)
        proto.tensor_content = np.arange(16, dtype=np.int32).tobytes()
    with grpc.insecure_channel(server.grpc_url) as channel:
        services.PredictionServiceStub(channel).Predict(request, timeout=30)


def _grps_grpc(server: ServerProcess) -> None:
    message = grps_pb2.GrpsMessage(model="simple-1")
    for name in ("INPUT0", "INPUT1"):
        message.gtensors.tensors.add(
            name=name, dtype=grps_pb2.DT_INT32, shape=[1, 16], flat_int32=list(range(16))
        )
    with grpc.insecure_channel(server.grpc_url) as channel:
        reply = grps_pb2_grpc.GrpsServiceStub(channel).Predict(message, timeout=30)
    assert reply.status.status == grps_pb2.Status.SUCCESS, reply


def _batched(server: ServerProcess) -> None:
    """Concurrent one-row calls: the dynamic batcher joins some into one execution."""
    body = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 1], "data": [1.0]}]})
    path = "/v2/models/sleep_2ms_batched/infer"
    with ThreadPoolExecutor(8) as pool:
        statuses = list(
            pool.map(lambda _: call(server.http_port, "POST", path, body)[0], range(BATCHED_CALLS))
        )
    assert statuses == [200] * BATCHED_CALLS


@pytest.fixture(scope="module")
def server():
    args = (
        "--model-repository",
        str(MODEL_REPOSITORY),
        "--load-model",
        "simple",
        "--load-model",
        "sleep_2ms_batched",
    )
    with ServerProcess(*args) as running:
        yield running


@pytest.fixture(scope="module")
def samples(server) -> Samples:
    """Known traffic on six dialect/transport pairs, one refused and one bad request, then a scrape."""
    for _ in range(SENT["oip_http"]):
        assert call(server.http_port, "POST", "/v2/models/simple/infer", OIP_BODY)[0] == 200
    for _ in range(SENT["tfserving_rest"]):
        assert call(server.http_port, "POST", "/v1/models/simple:predict", TFS_BODY)[0] == 200
    for _ in range(SENT["grps_http"]):
        assert call(server.http_port, "POST", "/grps/v1/infer/predict", GRPS_BODY)[0] == 200
    oip_grpc_infer(server, SENT["oip_grpc"])
    _tfs_grpc(server)
    _grps_grpc(server)
    assert call(server.http_port, "POST", "/v2/models/simple/infer", BAD_INPUT)[0] == 400
    assert call(server.http_port, "POST", "/v2/models/no_such_model/infer", OIP_BODY)[0] == 404
    _batched(server)
    return scrape(server.metrics_port)[1]


def _buckets(samples: Samples, family: str, **labels: str) -> list[tuple[float, float]]:
    """(le, cumulative count) of one histogram, by bound."""
    found = []
    for (name, pairs), count in samples.items():
        found_labels = dict(pairs)
        le = found_labels.pop("le", None)
        if name == f"{family}_bucket" and found_labels == labels:
            found.append((float(le), count))
    return sorted(found)


def test_latency_histograms_are_cumulative_and_count_what_the_counters_count(samples):
    success = value(samples, "nv_inference_request_success", **SIMPLE)
    executions = value(samples, "nv_inference_exec_count", **SIMPLE)
    assert success == sum(SENT.values())
    expected_count = {"request": success, "queue": success}  # every request; compute: every execution
    for phase in PHASES:
        family = f"nv_inference_{phase}_duration_histogram_us"
        buckets = _buckets(samples, family, **SIMPLE)
        assert len(buckets) == 18 and buckets[-1][0] == float("inf"), buckets
        counts = [count for _, count in buckets]
        assert counts == sorted(counts), f"{phase}: buckets are not cumulative: {counts}"
        assert (
            buckets[-1][1]
            == value(samples, f"{family}_count", **SIMPLE)
            == expected_count.get(phase, executions)
        )
    # The sums agree with Triton's cumulative counters (whole microseconds, rounded per observation).
    request_sum = value(samples, "nv_inference_request_duration_histogram_us_sum", **SIMPLE)
    assert 0 < request_sum <= value(samples, "nv_inference_request_duration_us", **SIMPLE) + 1


def test_requests_count_by_protocol(samples):
    for protocol, sent in SENT.items():
        labels = {**SIMPLE, "protocol": protocol}
        assert value(samples, "modelplatform_requests", **labels, outcome="success") == sent, protocol
        assert value(samples, "modelplatform_request_duration_seconds_count", **labels) == sent, protocol
        buckets = _buckets(samples, "modelplatform_request_duration_seconds", **labels)
        assert buckets[0][0] == 50e-6 and buckets[-2][0] == 10.0, buckets  # the bounds in seconds
    assert value(samples, "modelplatform_requests", **SIMPLE, protocol="oip_http", outcome="failure") == 1
    # Refused before any version (unknown model): under the model's own entry, names unknown -> "".
    refused = {"model": "", "version": "", "protocol": "oip_http", "outcome": "failure"}
    assert value(samples, "modelplatform_requests", **refused) == 1
    assert {labels for name, labels in samples if name == "modelplatform_requests"} >= {
        tuple(sorted({**SIMPLE, "protocol": p, "outcome": "success"}.items())) for p in SENT
    }


def test_batch_size_histogram_sums_the_rows(samples):
    batched = {"model": "sleep_2ms_batched", "version": "1"}
    executions = value(samples, "nv_inference_exec_count", **batched)
    assert value(samples, "modelplatform_inference_batch_size_count", **batched) == executions
    assert value(samples, "modelplatform_inference_batch_size_sum", **batched) == BATCHED_CALLS
    buckets = _buckets(samples, "modelplatform_inference_batch_size", **batched)
    assert [le for le, _ in buckets] == [*(2.0**k for k in range(11)), float("inf")]
    counts = [count for _, count in buckets]
    assert counts == sorted(counts) and counts[-1] == executions
    # simple does not batch: every execution has one row.
    assert _buckets(samples, "modelplatform_inference_batch_size", **SIMPLE)[0][1] == sum(SENT.values())


def test_state_gauge_and_load_counters_follow_the_repository_api(server, samples):
    state = "modelplatform_model_state"
    assert value(samples, state, **SIMPLE, state="READY") == 1
    assert value(samples, state, **SIMPLE, state="UNAVAILABLE") == 0
    loads = "modelplatform_model_loads"
    assert value(samples, loads, model="simple", outcome="success") == 1  # the start-up load
    assert call(server.http_port, "POST", "/v2/repository/models/identity_fp32/load", "{}")[0] == 200
    assert call(server.http_port, "POST", "/v2/repository/models/identity_fp32/unload", "{}")[0] == 200
    assert call(server.http_port, "POST", "/v2/repository/models/no_such_model/load", "{}")[0] >= 400
    _, after = scrape(server.http_port)
    fp32 = {"model": "identity_fp32", "version": "1"}
    assert value(after, state, **fp32, state="UNAVAILABLE") == 1
    assert value(after, state, **fp32, state="READY") == 0
    assert value(after, loads, model="identity_fp32", outcome="success") == 1
    assert value(after, "modelplatform_model_unloads", model="identity_fp32", outcome="success") == 1
    assert value(after, loads, model="", outcome="failure") == 1  # names it does not know: ""
    assert not any("no_such_model" in str(key) for key in after)


def test_buckets_come_from_metrics_config():
    bounds = "100,1000,10000,100000,1000000"
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple",
            "--metrics-config", f"histogram_buckets_us={bounds}")  # fmt: skip
    with ServerProcess(*args) as running:
        assert call(running.http_port, "POST", "/v2/models/simple/infer", OIP_BODY)[0] == 200
        _, samples = scrape(running.metrics_port)
    buckets = _buckets(samples, "nv_inference_request_duration_histogram_us", **SIMPLE)
    assert [le for le, _ in buckets] == [*map(float, bounds.split(",")), float("inf")]
    assert buckets[-1][1] == 1


def test_histogram_latencies_false_leaves_the_histograms_out():
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple",
            "--metrics-config", "histogram_latencies=false")  # fmt: skip
    with ServerProcess(*args) as running:
        assert call(running.http_port, "POST", "/v2/models/simple/infer", OIP_BODY)[0] == 200
        text, samples = scrape(running.metrics_port)
    assert "_histogram_us" not in text and "modelplatform_request_duration_seconds" not in text
    assert value(samples, "modelplatform_requests", **SIMPLE, protocol="oip_http", outcome="success") == 1


@pytest.mark.parametrize(
    "config", ["histogram_buckets_us=500,100", "histogram_buckets_us=1,x", "histogram_buckets_us=0,5"]
)
def test_bad_buckets_stop_start_up(config):
    from tests.core.test_cli import _serve_until_it_exits

    returncode, stderr = _serve_until_it_exits(
        "--model-repository", str(MODEL_REPOSITORY), "--metrics-config", config
    )
    assert returncode != 0
    assert "histogram_buckets_us" in stderr, stderr


def test_every_metric_the_grafana_dashboard_reads_is_in_a_scrape(samples):
    scraped = {name for name, _ in samples}
    for query in dashboard_queries():
        names = metric_names(query)
        assert names, query
        # GPU families exist only where NVML finds a GPU.
        missing = {
            n
            for n in names - scraped
            if not (n.startswith("nv_gpu_") and not any("nv_gpu" in s for s in scraped))
        }
        assert not missing, f"{query}: {missing}"


@pytest.mark.parametrize(
    ("config", "said"),
    [("bogus=1", "unknown key 'bogus'"), ("counter_latencies=maybe", "must be true or false")],
)
def test_a_bad_metrics_config_is_one_line_and_exit_2_before_start_up(config, said):
    from tests.core.test_cli import _serve_until_it_exits

    returncode, stderr = _serve_until_it_exits(
        "--model-repository", str(MODEL_REPOSITORY), "--metrics-config", config
    )
    lines = stderr.strip().splitlines()
    assert returncode == 2, stderr
    assert len(lines) == 1 and lines[0].startswith("error: metrics_config") and said in lines[0], stderr
