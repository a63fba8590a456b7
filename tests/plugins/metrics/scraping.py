"""What the metrics tests share: request bodies per dialect, one call per connection, and a
scrape parsed with prometheus-client into samples by (name, labels)."""

from __future__ import annotations

import http.client
import json
import re
import time
from pathlib import Path

import grpc
import numpy as np
from prometheus_client.parser import text_string_to_metric_families

from modelplatform.testing import ServerProcess
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]

ROW = list(range(16))
OIP_BODY = json.dumps({"inputs": [
    {"name": n, "datatype": "INT32", "shape": [1, 16], "data": ROW} for n in ("INPUT0", "INPUT1")
]})  # fmt: skip
TFS_BODY = json.dumps({"inputs": {"INPUT0": [ROW], "INPUT1": [ROW]}})
GRPS_BODY = json.dumps({"model": "simple-1", "gtensors": {"tensors": [
    {"name": n, "dtype": "DT_INT32", "shape": [1, 16], "flat_int32": ROW} for n in ("INPUT0", "INPUT1")
]}})  # fmt: skip
BAD_INPUT = json.dumps(
    {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 3], "data": [1, 2, 3]}]}
)


def call(port: int, method: str, path: str, body: str | None = None) -> tuple[int, str, bytes]:
    """One request on its own connection: status, content type, body."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=body, headers={"Content-Type": "application/json"})
        reply = connection.getresponse()
        return reply.status, reply.getheader("content-type") or "", reply.read()
    finally:
        connection.close()


def scrape(port: int) -> tuple[str, Samples]:
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


def oip_grpc_infer(server: ServerProcess, times: int) -> None:
    """``times`` ModelInfer calls of simple through the OIP stubs (tritonclient.grpc cannot
    share a process with the server's protos: one descriptor pool; these are the same calls)."""
    row = np.arange(16, dtype=np.int32).tobytes()
    request = pb.ModelInferRequest(
        model_name="simple",
        inputs=[pb.ModelInferRequest.InferInputTensor(name=n, datatype="INT32", shape=[1, 16])
                for n in ("INPUT0", "INPUT1")],
        raw_input_contents=[row, row],
    )  # fmt: skip
    with grpc.insecure_channel(server.grpc_url) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        for _ in range(times):
            stub.ModelInfer(request, timeout=30)


def wait_all_ready(server: ServerProcess) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if {call(server.http_port, "GET", "/v2/health/ready")[0] for _ in range(8)} == {200}:
            return
        time.sleep(0.2)
    raise AssertionError(server.log()[-3000:])


DASHBOARD = Path(__file__).resolve().parents[3] / "deploy" / "grafana" / "modelplatform.json"
_METRIC_NAME = re.compile(r"\b((?:nv|modelplatform)_[a-z_]+)\b")


def dashboard_queries() -> list[str]:
    """Every PromQL expression of the committed Grafana dashboard."""
    dashboard = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def metric_names(query: str) -> set[str]:
    """The sample names a query reads (a histogram's as ``<family>_bucket`` and the like)."""
    return set(_METRIC_NAME.findall(query))
