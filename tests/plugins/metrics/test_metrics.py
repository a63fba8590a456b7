"""The metrics plugin against a real server: traffic over four dialects, then scrapes of
the metrics port and of /metrics on the HTTP port, parsed with prometheus-client."""

from __future__ import annotations

import http.client
import json
import socket

import grpc
import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from modelplatform.testing import ServerProcess
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc

from ...conftest import MODEL_REPOSITORY

ROW = list(range(16))
OIP_BODY = json.dumps({"inputs": [
    {"name": n, "datatype": "INT32", "shape": [1, 16], "data": ROW} for n in ("INPUT0", "INPUT1")
]})  # fmt: skip
TFS_BODY = json.dumps({"inputs": {"INPUT0": [ROW], "INPUT1": [ROW]}})
GRPS_BODY = json.dumps({"model": "simple-1", "gtensors": {"tensors": [
    {"name": n, "dtype": "DT_INT32", "shape": [1, 16], "flat_int32": ROW} for n in ("INPUT0", "INPUT1")
]}})  # fmt: skip
BAD_INPUT = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 3], "data": [1, 2, 3]}]})

TRITON_FAMILIES = {
    "nv_inference_request_success", "nv_inference_request_failure", "nv_inference_count",
    "nv_inference_exec_count", "nv_inference_request_duration_us", "nv_inference_queue_duration_us",
    "nv_inference_compute_input_duration_us", "nv_inference_compute_infer_duration_us",
    "nv_inference_compute_output_duration_us", "nv_inference_pending_request_count",
    "nv_model_load_duration_secs", "nv_cpu_utilization", "nv_cpu_memory_total_bytes",
    "nv_cpu_memory_used_bytes",
}  # fmt: skip


def call(port: int, method: str, path: str, body: str | None = None) -> tuple[int, str, bytes]:
    """One request on its own connection: status, content type, body."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=body, headers={"Content-Type": "application/json"})
        reply = connection.getresponse()
        return reply.status, reply.getheader("content-type") or "", reply.read()
    finally:
        connection.close()


def scrape(port: int) -> tuple[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]]:
    """The exposition text and its samples by (name, sorted labels)."""
    status, content_type, body = call(port, "GET", "/metrics")
    assert status == 200, body
    assert content_type.startswith("text/plain; version=0.0.4")
    text = body.decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            # The parser names counter samples <name>_total whatever the text says;
            # the text itself is checked for Triton's names below.
            name = sample.name.removesuffix("_total") if family.type == "counter" else sample.name
            samples[(name, tuple(sorted(sample.labels.items())))] = sample.value
    return text, samples


def value(samples: dict, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


@pytest.fixture(scope="module")
def server():
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple")
    with ServerProcess(*args) as running:
        yield running


@pytest.fixture(scope="module")
def traffic(server):
    """Known traffic: 2 requests per dialect (OIP HTTP and gRPC, TF Serving REST, grps REST)."""
    for _ in range(2):
        assert call(server.http_port, "POST", "/v2/models/simple/infer", OIP_BODY)[0] == 200
        assert call(server.http_port, "POST", "/v1/models/simple:predict", TFS_BODY)[0] == 200
        assert call(server.http_port, "POST", "/grps/v1/infer/predict", GRPS_BODY)[0] == 200
    # tritonclient.grpc cannot share a process with the server's protos (one descriptor pool):
    # the OIP stubs are the same wire calls.
    row = np.arange(16, dtype=np.int32).tobytes()
    request = pb.ModelInferRequest(
        model_name="simple",
        inputs=[pb.ModelInferRequest.InferInputTensor(name=n, datatype="INT32", shape=[1, 16])
                for n in ("INPUT0", "INPUT1")],
        raw_input_contents=[row, row],
    )  # fmt: skip
    with grpc.insecure_channel(server.grpc_url) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        for _ in range(2):
            stub.ModelInfer(request, timeout=30)
    assert call(server.http_port, "POST", "/v2/models/simple/infer", BAD_INPUT)[0] == 400
    for name in ("no_such_model_a", "no_such_model_b"):
        assert call(server.http_port, "POST", f"/v2/models/{name}/infer", OIP_BODY)[0] == 404
    return 8


def test_both_endpoints_count_every_dialect(server, traffic):
    for port in (server.metrics_port, server.http_port):
        _, samples = scrape(port)
        simple = {"model": "simple", "version": "1"}
        assert value(samples, "nv_inference_request_success", **simple) == traffic
        assert value(samples, "nv_inference_count", **simple) == traffic
        assert value(samples, "nv_inference_exec_count", **simple) == traffic
        assert value(samples, "nv_inference_pending_request_count", **simple) == 0
        assert value(samples, "nv_model_load_duration_secs", **simple) > 0


def test_every_duration_is_measured(server, traffic):
    _, samples = scrape(server.metrics_port)
    for phase in ("request", "queue", "compute_input", "compute_infer", "compute_output"):
        assert value(samples, f"nv_inference_{phase}_duration_us", model="simple", version="1") > 0, phase


def test_failures_by_reason_and_unknown_names_share_one_label_set(server, traffic):
    _, samples = scrape(server.metrics_port)
    failure = "nv_inference_request_failure"
    assert value(samples, failure, model="simple", version="1", reason="OTHER") == 1  # bad input
    for reason in ("REJECTED", "CANCELED", "BACKEND"):
        assert value(samples, failure, model="simple", version="1", reason=reason) == 0
    # Two unknown names: one series with an empty model label, none per name.
    assert value(samples, failure, model="", version="", reason="OTHER") == 2
    assert not any("no_such_model" in str(key) for key in samples)


def test_triton_names_without_total_or_created(server, traffic):
    text, samples = scrape(server.metrics_port)
    names = {name for name, _ in samples}
    assert TRITON_FAMILIES <= names
    sample_names = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if not line.startswith("#")}
    assert not any(n.endswith(("_total", "_created")) for n in sample_names), sample_names
    assert "# TYPE nv_inference_count counter" in text
    assert "# TYPE nv_inference_pending_request_count gauge" in text
    assert 0 <= value(samples, "nv_cpu_utilization") <= 1
    assert 0 < value(samples, "nv_cpu_memory_used_bytes") <= value(samples, "nv_cpu_memory_total_bytes")
    labels = {key for name, labels in samples for key, _ in labels if name.startswith("nv_inference")}
    assert labels == {"model", "version", "reason"}


def test_metrics_port_answers_only_metrics(server):
    assert call(server.metrics_port, "GET", "/")[0] == 404
    assert call(server.metrics_port, "POST", "/metrics", "x")[0] == 400
    assert call(server.metrics_port, "DELETE", "/metrics")[0] == 405
    with socket.create_connection(("127.0.0.1", server.metrics_port), timeout=30) as raw:
        raw.sendall(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 70_000 + b"\r\n\r\n")
        assert raw.recv(100).startswith(b"HTTP/1.1 431")


def test_no_allow_metrics_serves_nothing():
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple", "--no-allow-metrics")
    with ServerProcess(*args) as running:
        assert call(running.http_port, "GET", "/metrics")[0] == 404
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", running.metrics_port), timeout=5).close()


def test_one_scrape_of_either_port_sums_every_worker():
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple", "--workers", "2")
    with ServerProcess(*args) as running:
        _wait_all_ready(running)
        sent = 16  # each on a new connection: SO_REUSEPORT spreads them over both workers
        for _ in range(sent):
            assert call(running.http_port, "POST", "/v2/models/simple/infer", OIP_BODY)[0] == 200
        for _ in range(4):  # each scrape on its own connection, so on either worker
            for port in (running.metrics_port, running.http_port):
                _, samples = scrape(port)
                assert value(samples, "nv_inference_request_success", model="simple", version="1") == sent


def _wait_all_ready(server: ServerProcess) -> None:
    import time

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if {call(server.http_port, "GET", "/v2/health/ready")[0] for _ in range(8)} == {200}:
            return
        time.sleep(0.2)
    raise AssertionError(server.log()[-3000:])
