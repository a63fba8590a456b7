"""OpenTelemetry spans against a local OTLP/HTTP receiver started by the test: a request
with a W3C ``traceparent`` (HTTP header or gRPC metadata) yields a span in that trace,
with the request's protocol, model, version, batch size and measured times."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator

import grpc
import pytest

from modelplatform.testing import ServerProcess
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc

from ...conftest import MODEL_REPOSITORY
from .conftest import Receiver

ROW = list(range(16))
OIP_BODY = json.dumps({"inputs": [
    {"name": n, "datatype": "INT32", "shape": [1, 16], "data": ROW} for n in ("INPUT0", "INPUT1")
]})  # fmt: skip
#: Decodes, then fails validation in the dataplane (wrong shape): counted, reason OTHER.
BAD_INPUT = json.dumps(
    {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 3], "data": [1, 2, 3]}]}
)
TRACE_HTTP = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACE_GRPC = "0af7651916cd43dd8448eb211c80319c"
PARENT = "00f067aa0ba902b7"


@pytest.fixture(scope="module")
def server(receiver: Receiver) -> Iterator[ServerProcess]:
    endpoint = f"http://127.0.0.1:{receiver.server_address[1]}/v1/traces"
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple",
            "--trace-otlp-endpoint", endpoint, "--trace-rate", "1000")  # fmt: skip
    with ServerProcess(*args, env={"OTEL_BSP_SCHEDULE_DELAY": "100"}) as running:
        yield running


def attributes(span) -> dict:  # type: ignore[no-untyped-def]  # an OpenTelemetry span of either export
    found = {}
    for item in span.attributes:
        value = item.value
        found[item.key] = value.int_value if value.HasField("int_value") else value.string_value
    return found


def post_infer(server: ServerProcess, headers: dict[str, str]) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        connection.request("POST", "/v2/models/simple/infer", body=OIP_BODY,
                           headers={"Content-Type": "application/json", **headers})  # fmt: skip
        reply = connection.getresponse()
        reply.read()
        return reply.status
    finally:
        connection.close()


def test_http_traceparent_yields_a_span_in_the_callers_trace(
    server: ServerProcess, receiver: Receiver
) -> None:
    assert post_infer(server, {"traceparent": f"00-{TRACE_HTTP}-{PARENT}-01"}) == 200
    spans = receiver.find(TRACE_HTTP)
    assert len(spans) == 1
    span = spans[0]
    assert span.parent_span_id.hex() == PARENT
    assert span.name == "infer simple"
    found = attributes(span)
    assert found["modelplatform.protocol"] == "oip_http"
    assert found["modelplatform.model"] == "simple" and found["modelplatform.model_version"] == "1"
    assert found["modelplatform.batch_size"] == 1
    assert found["modelplatform.compute_infer_us"] >= 0 and "modelplatform.queue_us" in found
    assert span.end_time_unix_nano > span.start_time_unix_nano


def test_grpc_metadata_traceparent_yields_a_span(server: ServerProcess, receiver: Receiver) -> None:
    with grpc.insecure_channel(server.grpc_url) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        request = pb.ModelInferRequest(model_name="simple")
        for name in ("INPUT0", "INPUT1"):
            tensor = request.inputs.add(name=name, datatype="INT32", shape=[1, 16])
            tensor.contents.int_contents.extend(ROW)
        stub.ModelInfer(request, metadata=[("traceparent", f"00-{TRACE_GRPC}-{PARENT}-01")], timeout=30)
    spans = receiver.find(TRACE_GRPC)
    assert len(spans) == 1
    assert attributes(spans[0])["modelplatform.protocol"] == "oip_grpc"
    assert spans[0].parent_span_id.hex() == PARENT


def test_a_failed_request_is_an_error_span(server: ServerProcess, receiver: Receiver) -> None:
    trace_id = "11112222333344445555666677778888"
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    connection.request("POST", "/v2/models/simple/infer", body=BAD_INPUT,
                       headers={"traceparent": f"00-{trace_id}-{PARENT}-01"})  # fmt: skip
    assert connection.getresponse().status == 400
    connection.close()
    spans = receiver.find(trace_id)
    assert len(spans) == 1
    assert spans[0].status.code == 2  # STATUS_CODE_ERROR
    assert attributes(spans[0])["modelplatform.failure_reason"] == "OTHER"


def test_unsampled_requests_follow_the_rate_and_health_checks_are_not_traced(
    server: ServerProcess, receiver: Receiver
) -> None:
    """--trace-rate 1000: a handful of requests without a sampled traceparent give no span."""
    unsampled = "99998888777766665555444433332222"
    with receiver.lock:
        before = len(receiver.spans)
    assert post_infer(server, {"traceparent": f"00-{unsampled}-{PARENT}-00"}) == 200
    for _ in range(3):
        assert post_infer(server, {}) == 200
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    connection.request("GET", "/v2/health/ready", headers={"traceparent": f"00-{unsampled}-{PARENT}-01"})
    connection.getresponse().read()
    connection.close()
    time.sleep(1.5)  # several export rounds (100 ms each)
    with receiver.lock:
        assert len(receiver.spans) == before
