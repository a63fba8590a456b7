"""Scoped API keys (--api-keys-file) with the real server and real clients: missing, unknown,
wrong category, wrong model, on every dialect and the metrics port; the key's name logged, never the key."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import tritonclient.http as httpclient
from grpc_health.v1 import health_pb2, health_pb2_grpc

from modelplatform.testing import ServerProcess
from modelplatform_grps.protos import grps_pb2_grpc
from modelplatform_grps.protos.grps_pb2 import GrpsMessage
from modelplatform_tfserving.protos import services_pb2_grpc as services
from modelplatform_tfserving.protos import serving_apis_pb2 as apis

from ..conftest import MODEL_REPOSITORY
from .access_clients import SIMPLE_BODY, grpc_code, request, triton_grpc

BATCH = "batch-key-7f3a9c"  # inference and metadata, model simple only
OPS = "ops-key-0d41e8"  # everything but inference, every model


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def keys_toml(*entries: tuple[str, str, list[str], list[str] | None]) -> str:
    lines = []
    for name, key, categories, models in entries:
        lines += [
            "[[keys]]",
            f'name = "{name}"',
            f'sha256 = "{sha256(key)}"',
            f"categories = {json.dumps(categories)}",
        ]
        if models is not None:
            lines.append(f"models = {json.dumps(models)}")
    return "\n".join(lines) + "\n"


#: grps predict of simple (INPUT0 = INPUT1 = ones: OUTPUT0 = twos), as JSON.
GRPS_SIMPLE = json.dumps(
    {
        "model": "simple",
        "gtensors": {
            "tensors": [
                {"name": name, "dtype": "DT_INT32", "shape": [1, 16], "flat_int32": [1] * 16}
                for name in ("INPUT0", "INPUT1")
            ]
        },
    }
).encode()


def _grps_message(body: bytes) -> bytes:
    """The JSON form as the proto's bytes (grps gRPC clients send the same message)."""
    from google.protobuf import json_format

    return json_format.Parse(body, GrpsMessage()).SerializeToString()


BATCH_ENTRY = ("batch-jobs", BATCH, ["inference", "metadata"], ["simple"])
OPS_ENTRY = (
    "ops",
    OPS,
    ["metadata", "statistics", "metrics", "admin", "model-repository", "model-config"],
    None,
)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    keys = tmp_path_factory.mktemp("keys") / "keys.toml"
    keys.write_text(keys_toml(BATCH_ENTRY, OPS_ENTRY))
    with ServerProcess("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple",
                       "--api-keys-file", str(keys)) as process:  # fmt: skip
        yield process


@pytest.fixture(scope="module")
def channel(server: ServerProcess) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(server.grpc_url) as open_channel:
        yield open_channel


def test_missing_and_unknown_keys_are_401_with_a_challenge(server: ServerProcess) -> None:
    for headers, what in [({}, "no API key"), (bearer("not-a-key"), "an unknown API key"),
                          ({"x-api-key": "not-a-key"}, "an unknown API key")]:  # fmt: skip
        for path in ("/v2/models/simple/infer", "/v2/models/simple/infer?via=sanic"):
            status, answer_headers, body = request(server.http_port, "POST", path, SIMPLE_BODY, headers)
            assert status == 401 and answer_headers["www-authenticate"].startswith("Bearer")
            assert json.loads(body) == {"error": f"this API needs an API key; the request has {what}"}


def test_a_key_works_as_bearer_and_as_x_api_key(server: ServerProcess) -> None:
    for path in ("/v2/models/simple/infer", "/v2/models/simple/infer?via=sanic"):
        assert request(server.http_port, "POST", path, SIMPLE_BODY, bearer(BATCH))[0] == 200
        assert request(server.http_port, "POST", path, SIMPLE_BODY, {"x-api-key": BATCH})[0] == 200
        assert (
            request(server.http_port, "POST", path, SIMPLE_BODY, {"Authorization": f"bearer {BATCH}"})[0]
            == 200
        )
    with httpclient.InferenceServerClient(server.http_url) as client:
        assert client.get_model_metadata("simple", headers=bearer(BATCH))["name"] == "simple"
        assert client.is_server_ready()  # health stays open for probes (--api-keys-open-health)


def test_a_known_key_outside_its_scope_is_403(server: ServerProcess) -> None:
    port = server.http_port
    status, _, body = request(port, "GET", "/v2/models/stats", headers=bearer(BATCH))
    assert (status, json.loads(body)) == (
        403,
        {"error": "API key 'batch-jobs' may not call 'statistics' APIs"},
    )
    status, _, body = request(port, "POST", "/v2/models/other/infer", SIMPLE_BODY, bearer(BATCH))
    assert (status, json.loads(body)) == (403, {"error": "API key 'batch-jobs' may not use model 'other'"})
    assert request(port, "GET", "/v2/models/simple/config", headers=bearer(BATCH))[0] == 403  # model-config
    assert request(port, "POST", "/v2/models/simple/infer", SIMPLE_BODY, bearer(OPS))[0] == 403  # inference
    assert request(port, "GET", "/v2/models/simple/config", headers=bearer(OPS))[0] == 200
    assert request(port, "POST", "/v2/repository/index", b"", bearer(OPS))[0] == 200


def test_tfserving_rest_answers_in_its_own_shape(server: ServerProcess) -> None:
    port = server.http_port
    status, _, body = request(port, "GET", "/v1/models/simple")
    assert status == 401 and set(json.loads(body)) == {"error"}
    assert request(port, "GET", "/v1/models/simple/metadata", headers=bearer(BATCH))[0] == 200
    status, _, body = request(port, "GET", "/v1/models/other", headers=bearer(BATCH))
    assert (status, json.loads(body)) == (403, {"error": "API key 'batch-jobs' may not use model 'other'"})
    predict = json.dumps({"inputs": {"INPUT0": [list(range(16))], "INPUT1": [[1] * 16]}}).encode()
    assert request(port, "POST", "/v1/models/simple:predict", predict, bearer(BATCH))[0] == 200


def test_grps_rest_answers_in_its_own_shape(server: ServerProcess) -> None:
    port = server.http_port
    status, _, body = request(port, "GET", "/grps/v1/health/offline")
    assert status == 401 and json.loads(body)["status"]["code"] == 401
    status, _, body = request(port, "GET", "/grps/v1/health/offline", headers=bearer(BATCH))
    assert (
        status == 403
        and json.loads(body)["status"]["msg"] == "API key 'batch-jobs' may not call 'admin' APIs"
    )
    assert request(port, "GET", "/grps/v1/health/online", headers=bearer(OPS))[0] == 200
    assert request(port, "GET", "/grps/v1/health/live")[0] == 200


def test_grps_checks_the_model_its_body_or_route_names_against_the_keys_models(server: ServerProcess) -> None:
    """grps names its model in the body (or a model owns the route): checked once decoded."""
    port = server.http_port
    status, _, body = request(port, "POST", "/grps/v1/infer/predict", GRPS_SIMPLE, bearer(BATCH))
    assert status == 200, body
    assert json.loads(body)["gtensors"]["tensors"][0]["flat_int32"] == [2] * 16
    for model in ("identity_fp32", "no_such_model"):  # 403 before the name is looked up: no probing
        other = GRPS_SIMPLE.replace(b'"simple"', f'"{model}"'.encode())
        status, _, body = request(port, "POST", "/grps/v1/infer/predict", other, bearer(BATCH))
        assert (
            status == 403
            and json.loads(body)["status"]["msg"] == f"API key 'batch-jobs' may not use model '{model}'"
        )
    status, _, body = request(
        port, "POST", "/stream_counter/count", b"3", bearer(BATCH)
    )  # stream_counter's route
    assert status == 403 and b"may not use model 'stream_counter'" in body


def test_metrics_need_a_key_with_the_metrics_category(server: ServerProcess) -> None:
    for port in (server.http_port, server.metrics_port):
        assert request(port, "GET", "/metrics")[0] == 401
        assert request(port, "GET", "/metrics", headers=bearer(BATCH))[0] == 403
        status, _, body = request(port, "GET", "/metrics", headers=bearer(OPS))
        assert status == 200 and b"nv_inference_count" in body


def test_tritonclient_grpc_with_keys(server: ServerProcess) -> None:
    result = triton_grpc(
        server.grpc_url,
        f"""
        batch = {{"authorization": "Bearer {BATCH}"}}
        result = [
            outcome(lambda: client.infer("simple", simple_inputs(), headers=batch)),
            outcome(lambda: client.infer("simple", simple_inputs())),
            outcome(lambda: client.infer("simple", simple_inputs(), headers={{"authorization": "Bearer nope"}})),
            outcome(lambda: client.infer("other", simple_inputs(), headers=batch)),
            outcome(lambda: client.get_inference_statistics("simple", headers=batch)),
            outcome(lambda: client.is_server_live()),
        ]
    """,
    )
    assert result[0] == "OK"
    assert result[1][0] == result[2][0] == "StatusCode.UNAUTHENTICATED"
    assert result[3] == ["StatusCode.PERMISSION_DENIED", "API key 'batch-jobs' may not use model 'other'"]
    assert result[4] == [
        "StatusCode.PERMISSION_DENIED",
        "API key 'batch-jobs' may not call 'statistics' APIs",
    ]
    assert result[5] == "OK"  # health is open for probes


def test_a_stream_checks_each_message_against_the_keys_models(server: ServerProcess) -> None:
    result = triton_grpc(
        server.grpc_url,
        f"""
        import queue
        answers = queue.Queue()
        def collect(result, error):
            answers.put("OK" if error is None else [error.status(), error.message()])
        def stream(headers, models):
            client.start_stream(callback=collect, headers=headers)
            seen = []
            for model in models:
                try:
                    client.async_stream_infer(model, simple_inputs())
                except InferenceServerException:
                    pass  # refused as the stream opened, before this send: the callback has the error
                seen.append(answers.get(timeout=30))
            client.stop_stream()
            return seen
        batch = {{"authorization": "Bearer {BATCH}"}}
        result = [stream(batch, ["simple", "simple", "other"]), stream({{}}, ["simple"])]
    """,
    )
    allowed, refused = result
    assert allowed[:2] == ["OK", "OK"]
    assert "API key 'batch-jobs' may not use model 'other'" in allowed[2][1]
    assert "needs an API key" in refused[0][1]


def test_tfserving_and_grps_grpc_and_health_with_keys(channel: grpc.Channel) -> None:
    ops, batch = [("authorization", f"Bearer {OPS}")], [("authorization", f"Bearer {BATCH}")]
    models = services.ModelServiceStub(channel)
    status = apis.GetModelStatusRequest(model_spec=apis.ModelSpec(name="simple"))
    assert grpc_code(models.GetModelStatus, status, timeout=10) == "UNAUTHENTICATED"
    assert grpc_code(models.GetModelStatus, status, metadata=ops, timeout=10) == "OK"
    other = apis.GetModelStatusRequest(model_spec=apis.ModelSpec(name="other"))
    assert grpc_code(models.GetModelStatus, other, metadata=batch, timeout=10) == "PERMISSION_DENIED"
    stub = grps_pb2_grpc.GrpsServiceStub(channel)
    assert grpc_code(stub.Online, GrpsMessage(), metadata=batch, timeout=10) == "PERMISSION_DENIED"
    assert grpc_code(stub.Online, GrpsMessage(), metadata=ops, timeout=10) == "OK"
    allowed = stub.Predict(GrpsMessage.FromString(_grps_message(GRPS_SIMPLE)), metadata=batch, timeout=10)
    assert allowed.status.code == 200 and list(allowed.gtensors.tensors[0].flat_int32) == [2] * 16
    other = stub.Predict(GrpsMessage(model="identity_fp32", str_data="x"), metadata=batch, timeout=10)
    assert (other.status.code, other.status.msg) == (
        403,
        "API key 'batch-jobs' may not use model 'identity_fp32'",
    )
    health = health_pb2_grpc.HealthStub(channel)
    reply = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_the_log_names_the_key_never_the_key_itself(server: ServerProcess) -> None:
    bad = json.dumps(
        {"inputs": [{"name": "INPUT0", "shape": [1, 3], "datatype": "INT32", "data": [1, 2, 3]}]}
    )
    assert request(server.http_port, "POST", "/v2/models/simple/infer", bad.encode(), bearer(BATCH))[0] == 400
    failed = [line for line in server.log().splitlines() if "request_failed" in line and "simple" in line]
    assert any("batch-jobs" in line and "api_key" in line for line in failed), failed
    assert BATCH not in server.log() and OPS not in server.log()


def test_a_broken_keys_file_stops_serve_with_exit_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    keys = tmp_path / "keys.toml"
    keys.write_text('[[keys]]\nname = "x"\nsha256 = "abc"\ncategories = ["inference"]\n')
    command = [sys.executable, "-m", "modelplatform", "serve", "--model-repository", str(tmp_path),
               "--api-keys-file", str(keys)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "'sha256' must be 64 hex digits" in done.stderr
