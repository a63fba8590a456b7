"""Restricted APIs (Triton's --http-restricted-api / --grpc-restricted-protocol) on every dialect,
with the real server and real clients: both HTTP paths, the metrics port, and every gRPC service."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import grpc
import pytest
import tritonclient.http as httpclient
from grpc_health.v1 import health_pb2, health_pb2_grpc
from tritonclient.utils import InferenceServerException

from modelplatform.testing import ServerProcess
from modelplatform_grps.protos import grps_pb2_grpc
from modelplatform_grps.protos.grps_pb2 import GrpsMessage
from modelplatform_tfserving.protos import services_pb2_grpc as services
from modelplatform_tfserving.protos import serving_apis_pb2 as apis

from ..conftest import MODEL_REPOSITORY
from .access_clients import SIMPLE_BODY, grpc_code, request, triton_grpc

INFER = {"infer-key": "infer-secret"}
ADMIN = {"admin-key": "admin-secret"}
GRPC_INFER = [("triton-grpc-protocol-infer-key", "infer-secret")]
GRPC_HEALTH = [("triton-grpc-protocol-health-key", "health-secret")]
REFUSED_INFER = "This API is restricted, expecting header 'infer-key'"
REFUSED_ADMIN = "This API is restricted, expecting header 'admin-key'"


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with ServerProcess(
        "--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple",
        "--http-restricted-api", "inference:infer-key=infer-secret",
        "--http-restricted-api", "admin,metrics:admin-key=admin-secret",
        "--grpc-restricted-protocol", "inference,admin:infer-key=infer-secret",
        "--grpc-restricted-protocol", "health:health-key=health-secret",
    ) as process:  # fmt: skip
        yield process


@pytest.fixture(scope="module")
def channel(server: ServerProcess) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(server.grpc_url) as open_channel:
        yield open_channel


def test_oip_inference_is_refused_with_tritons_body_on_both_paths(server: ServerProcess) -> None:
    expected = json.dumps({"error": REFUSED_INFER}, separators=(",", ":")).encode()
    big = json.loads(SIMPLE_BODY)
    big["parameters"] = {"padding": "x" * 300_000}  # over the fast lane's body limit: Sanic reads it
    for path, body in [("/v2/models/simple/infer", SIMPLE_BODY),  # the fast lane
                       ("/v2/models/simple/infer?via=sanic", SIMPLE_BODY),  # a query string: Sanic
                       ("/v2/models/simple/infer", json.dumps(big).encode())]:  # fmt: skip
        status, _, answer = request(server.http_port, "POST", path, body)
        assert (status, answer) == (403, expected), path
        assert request(server.http_port, "POST", path, body, {"infer-key": "wrong"})[0] == 403
        assert request(server.http_port, "POST", path, body, INFER)[0] == 200, path
        assert request(server.http_port, "POST", path, body, {"Infer-Key": "infer-secret"})[0] == 200


def test_tritonclient_http_sends_the_header_and_other_apis_stay_open(server: ServerProcess) -> None:
    with httpclient.InferenceServerClient(server.http_url) as client:
        tensors = [httpclient.InferInput(name, [1, 16], "INT32") for name in ("INPUT0", "INPUT1")]
        for tensor in tensors:
            tensor.set_data_from_numpy(__import__("numpy").arange(16, dtype="int32").reshape(1, 16))
        with pytest.raises(InferenceServerException) as refused:
            client.infer("simple", tensors)
        assert refused.value.status() == "403" and refused.value.message() == REFUSED_INFER
        assert client.infer("simple", tensors, headers=INFER).as_numpy("OUTPUT0").shape == (1, 16)
        assert client.is_server_ready() and client.get_model_metadata("simple")["name"] == "simple"
        assert client.get_inference_statistics("simple")["model_stats"]


def test_tfserving_rest_refuses_in_its_own_shape(server: ServerProcess) -> None:
    body = json.dumps({"inputs": {"INPUT0": [list(range(16))], "INPUT1": [[1] * 16]}}).encode()
    status, _, answer = request(server.http_port, "POST", "/v1/models/simple:predict", body)
    assert (status, json.loads(answer)) == (403, {"error": REFUSED_INFER})
    assert request(server.http_port, "POST", "/v1/models/simple:predict", body, INFER)[0] == 200
    assert request(server.http_port, "GET", "/v1/models/simple")[0] == 200  # metadata: not restricted


def test_grps_rest_refuses_in_its_own_shape(server: ServerProcess) -> None:
    status, _, answer = request(server.http_port, "POST", "/grps/v1/infer/predict", b'{"str_data": "x"}')
    assert status == 403
    assert json.loads(answer) == {"status": {"code": 403, "msg": REFUSED_INFER, "status": "FAILURE"}}
    status, _, answer = request(server.http_port, "GET", "/grps/v1/health/offline")  # admin
    assert status == 403 and json.loads(answer)["status"]["msg"] == REFUSED_ADMIN
    assert request(server.http_port, "GET", "/grps/v1/health/live")[0] == 200  # health is open on HTTP
    assert request(server.http_port, "GET", "/grps/v1/health/online", headers=ADMIN)[0] == 200


def test_metrics_are_restricted_on_the_http_port_and_the_metrics_port(server: ServerProcess) -> None:
    status, _, answer = request(server.http_port, "GET", "/metrics")
    assert (status, json.loads(answer)) == (403, {"error": REFUSED_ADMIN})
    assert request(server.http_port, "GET", "/metrics", headers=ADMIN)[0] == 200
    status, _, answer = request(server.metrics_port, "GET", "/metrics")
    assert status == 403 and answer.decode().strip() == REFUSED_ADMIN
    status, _, answer = request(server.metrics_port, "GET", "/metrics", headers=ADMIN)
    assert status == 200 and b"nv_inference_request_success" in answer


def test_tritonclient_grpc_gets_tritons_answer(server: ServerProcess) -> None:
    result = triton_grpc(
        server.grpc_url,
        """
        result = [
            outcome(lambda: client.infer("simple", simple_inputs())),
            outcome(lambda: client.infer("simple", simple_inputs(),
                                         headers={"triton-grpc-protocol-infer-key": "infer-secret"})),
            outcome(lambda: client.is_server_live()),
            outcome(lambda: client.is_server_live(headers={"triton-grpc-protocol-health-key": "health-secret"})),
            outcome(lambda: client.get_model_metadata("simple")),
        ]
    """,
    )
    expected = "This protocol is restricted, expecting header 'triton-grpc-protocol-infer-key'"
    assert result[0] == ["StatusCode.UNAVAILABLE", expected]
    assert result[1] == "OK"
    assert result[2] == [
        "StatusCode.UNAVAILABLE",
        "This protocol is restricted, expecting header 'triton-grpc-protocol-health-key'",
    ]
    assert result[3] == "OK" and result[4] == "OK"  # metadata is not restricted on gRPC


def test_grpc_health_v1_is_restricted_with_the_health_category(channel: grpc.Channel) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    check = health_pb2.HealthCheckRequest(service="")
    assert grpc_code(health.Check, check, timeout=10) == "UNAVAILABLE"
    assert (
        health.Check(check, metadata=GRPC_HEALTH, timeout=10).status == health_pb2.HealthCheckResponse.SERVING
    )


def test_tfserving_grpc_is_restricted_by_category(channel: grpc.Channel) -> None:
    predictions = services.PredictionServiceStub(channel)
    predict = apis.PredictRequest(model_spec=apis.ModelSpec(name="simple"))
    assert grpc_code(predictions.Predict, predict, timeout=10) == "UNAVAILABLE"
    # With the key the call reaches the dialect (which then judges the empty inputs itself).
    assert grpc_code(predictions.Predict, predict, metadata=GRPC_INFER, timeout=10) == "INVALID_ARGUMENT"
    models = services.ModelServiceStub(channel)
    status = apis.GetModelStatusRequest(model_spec=apis.ModelSpec(name="simple"))
    assert grpc_code(models.GetModelStatus, status, timeout=10) == "OK"  # metadata: open


def test_grps_grpc_is_restricted_by_category(channel: grpc.Channel) -> None:
    stub = grps_pb2_grpc.GrpsServiceStub(channel)
    assert grpc_code(stub.Offline, GrpsMessage(), timeout=10) == "UNAVAILABLE"  # admin
    assert grpc_code(stub.Predict, GrpsMessage(model="simple"), timeout=10) == "UNAVAILABLE"
    assert grpc_code(stub.Online, GrpsMessage(), metadata=GRPC_INFER, timeout=10) == "OK"
    assert grpc_code(stub.ServerMetadata, GrpsMessage(), timeout=10) == "OK"
    assert grpc_code(stub.CheckLiveness, GrpsMessage(), timeout=10) == "UNAVAILABLE"  # health on gRPC


@pytest.mark.parametrize(
    ("groups", "said"),
    [
        (["inference:a=b", "inference,health:c=d"], "category 'inference' is in more than one group"),
        (["infer:a=b"], "unknown API 'infer'"),
        (["inference"], "is not '<api>[,<api>...]:<key>=<value>'"),
    ],
)
def test_a_bad_restriction_stops_serve_with_exit_2(groups: list[str], said: str, tmp_path) -> None:
    flags = [arg for group in groups for arg in ("--http-restricted-api", group)]
    command = [sys.executable, "-m", "modelplatform", "serve", "--model-repository", str(tmp_path), *flags]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and said in done.stderr
