"""The metrics plugin against a real server: traffic over four dialects, then scrapes of
the metrics port and of /metrics on the HTTP port, parsed with prometheus-client."""

from __future__ import annotations

import socket

import pytest

from modelplatform.testing import ServerProcess

from ...conftest import MODEL_REPOSITORY
from .scraping import (
    BAD_INPUT,
    GRPS_BODY,
    OIP_BODY,
    TFS_BODY,
    call,
    oip_grpc_infer,
    scrape,
    value,
    wait_all_ready,
)

TRITON_FAMILIES = {
    "nv_inference_request_success", "nv_inference_request_failure", "nv_inference_count",
    "nv_inference_exec_count", "nv_inference_request_duration_us", "nv_inference_queue_duration_us",
    "nv_inference_compute_input_duration_us", "nv_inference_compute_infer_duration_us",
    "nv_inference_compute_output_duration_us", "nv_inference_pending_request_count",
    "nv_model_load_duration_secs", "nv_cpu_utilization", "nv_cpu_memory_total_bytes",
    "nv_cpu_memory_used_bytes",
}  # fmt: skip


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
    oip_grpc_infer(server, 2)
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
    sample_names = {
        line.split("{")[0].split(" ")[0] for line in text.splitlines() if not line.startswith("#")
    }
    assert not any(n.endswith(("_total", "_created")) for n in sample_names), sample_names
    assert "# TYPE nv_inference_count counter" in text
    assert "# TYPE nv_inference_pending_request_count gauge" in text
    assert 0 <= value(samples, "nv_cpu_utilization") <= 1
    assert 0 < value(samples, "nv_cpu_memory_used_bytes") <= value(samples, "nv_cpu_memory_total_bytes")
    # Triton's families keep Triton's labels; the histograms (issue 15 point 3) add only ``le``.
    triton = {name for name, _ in samples if name.startswith("nv_inference") and "_histogram_" not in name}
    labels = {key for name, labels in samples for key, _ in labels if name in triton}
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
        wait_all_ready(running)
        sent = 16  # each on a new connection: SO_REUSEPORT spreads them over both workers
        for _ in range(sent):
            assert call(running.http_port, "POST", "/v2/models/simple/infer", OIP_BODY)[0] == 200
        for _ in range(4):  # each scrape on its own connection, so on either worker
            for port in (running.metrics_port, running.http_port):
                _, samples = scrape(port)
                assert value(samples, "nv_inference_request_success", model="simple", version="1") == sent
