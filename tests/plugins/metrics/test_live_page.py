"""The live page at ``/``: every dialect's traffic, split by protocol, from the shared
counters, checked over HTTP and in headless Chromium."""

from __future__ import annotations

import http.client
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import grpc
import pytest

from modelplatform.testing import ServerProcess
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc

from ...conftest import MODEL_REPOSITORY
from .scraping import GRPS_BODY, OIP_BODY, ROW, TFS_BODY, scrape

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage")  # fmt: skip


def post(connection: http.client.HTTPConnection, path: str, body: str) -> int:
    connection.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    reply = connection.getresponse()
    reply.read()
    return reply.status


def get(port: int, path: str) -> tuple[int, str, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", path)
        reply = connection.getresponse()
        return reply.status, reply.getheader("content-type") or "", reply.read()
    finally:
        connection.close()


@pytest.fixture(scope="module")
def server():
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple")
    with ServerProcess(*args) as running:
        yield running


@pytest.fixture(scope="module")
def traffic(server: ServerProcess) -> ServerProcess:
    """200 OIP requests (150 HTTP, 50 gRPC) and 50 grps requests, all successful."""
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        for _ in range(150):
            assert post(connection, "/v2/models/simple/infer", OIP_BODY) == 200
        for _ in range(50):
            assert post(connection, "/grps/v1/infer/predict", GRPS_BODY) == 200
    finally:
        connection.close()
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        request = pb.ModelInferRequest(model_name="simple")
        for name in ("INPUT0", "INPUT1"):
            tensor = request.inputs.add(name=name, datatype="INT32", shape=[1, 16])
            tensor.contents.int_contents.extend(ROW)
        for _ in range(50):
            stub.ModelInfer(request, timeout=30)
    return server


def test_data_counts_every_dialect_by_protocol(traffic: ServerProcess) -> None:
    status, content_type, body = get(traffic.http_port, "/live/data")
    assert status == 200 and content_type.startswith("application/json")
    data = json.loads(body)
    assert data["requests"] == 250
    assert data["protocols"] == {"oip_http": 150, "oip_grpc": 50, "grps_http": 50}
    assert {"name": "simple", "version": "1", "state": "READY", "reason": ""} in data["models"]


def test_statistics_and_page_read_the_same_counters(traffic: ServerProcess) -> None:
    _, _, body = get(traffic.http_port, "/v2/models/simple/stats")
    stats = json.loads(body)["model_stats"][0]["inference_stats"]
    data = json.loads(get(traffic.http_port, "/live/data")[2])
    assert stats["success"]["count"] + stats["fail"]["count"] == data["requests"]


def test_tfserving_and_failures_are_split_too(server: ServerProcess) -> None:
    before = json.loads(get(server.http_port, "/live/data")[2])
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        assert post(connection, "/v1/models/simple:predict", TFS_BODY) == 200
        assert post(connection, "/v2/models/no_such_model/infer", OIP_BODY) in (400, 404)
    finally:
        connection.close()
    after = json.loads(get(server.http_port, "/live/data")[2])
    assert after["protocols"]["tfserving_rest"] == before["protocols"].get("tfserving_rest", 0) + 1
    assert after["protocols"]["oip_http"] == before["protocols"].get("oip_http", 0) + 1
    assert after["failures"] == before["failures"] + 1
    assert after["requests"] == before["requests"] + 2


def test_page_is_html_without_external_assets(server: ServerProcess) -> None:
    status, content_type, page = get(server.http_port, "/")
    assert status == 200 and content_type.startswith("text/html")
    assert b"/live/data" in page
    assert not re.search(rb"(src|href)=\"https?://", page), "the page must work offline"


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make chromium)")
def test_page_in_chromium_shows_totals_split_models_and_series(
    traffic: ServerProcess, tmp_path: Path
) -> None:
    time.sleep(2.5)  # at least two one-second points for the series
    command = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000",
               "--dump-dom", f"http://{traffic.http_url}/"]  # fmt: skip
    dom = subprocess.run(command, capture_output=True, text=True, timeout=90).stdout
    total = re.search(r'<b id="requests">(\d+)</b>', dom)
    assert total is not None, dom[:3000]
    assert int(total.group(1)) >= 250  # the tfserving test may have run first
    split = dict(re.findall(r'<tr data-protocol="([a-z_]+)" data-count="(\d+)">', dom))
    assert split["oip_http"] != "0" and int(split["oip_grpc"]) == 50 and int(split["grps_http"]) == 50
    assert re.search(r'<tr data-model="simple" data-version="1" data-state="READY">', dom)
    for chart in ("rps", "cpu", "memory"):
        svg = re.search(rf'<svg[^>]*data-chart="{chart}"[^>]*>', dom)
        assert svg is not None, chart
        assert int(re.search(r'data-points="(\d+)"', svg.group(0)).group(1)) >= 1
    memory = re.search(r'<svg[^>]*data-chart="memory"[^>]*>', dom).group(0)
    assert float(re.search(r'data-max="([0-9.]+)"', memory).group(1)) > 0


def test_page_and_metrics_count_each_request_once_under_its_protocol(traffic: ServerProcess) -> None:
    """A gRPC stream of three requests adds three to oip_grpc, on the page and in
    modelplatform_requests alike: both read the same counters. (Last in this file: the
    Chromium test counts the traffic fixture's oip_grpc requests exactly.)"""
    before = json.loads(get(traffic.http_port, "/live/data")[2])["protocols"]
    with grpc.insecure_channel(f"127.0.0.1:{traffic.grpc_port}") as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        request = pb.ModelInferRequest(model_name="simple")
        for name in ("INPUT0", "INPUT1"):
            tensor = request.inputs.add(name=name, datatype="INT32", shape=[1, 16])
            tensor.contents.int_contents.extend(ROW)
        replies = list(stub.ModelStreamInfer(iter([request] * 3), timeout=30))
    assert len(replies) == 3 and not any(reply.error_message for reply in replies)
    page = json.loads(get(traffic.http_port, "/live/data")[2])["protocols"]
    assert page["oip_grpc"] == before["oip_grpc"] + 3
    assert {k: v for k, v in page.items() if k != "oip_grpc"} == {
        k: v for k, v in before.items() if k != "oip_grpc"
    }
    metrics: dict[str, float] = {}
    for (name, labels), count in scrape(traffic.http_port)[1].items():
        if name == "modelplatform_requests":
            protocol = dict(labels)["protocol"]
            metrics[protocol] = metrics.get(protocol, 0) + count
    assert metrics == page
