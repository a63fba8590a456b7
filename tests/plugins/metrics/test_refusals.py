"""Requests a dialect refuses before the dataplane is asked (issue 15 points 2 and 3): an
undecodable body, a model name the dialect resolves itself, a body over the limit. Each
counts once as a failure OTHER, under the model it named when the server knows that name
(else model ""), and under its protocol; a success still counts once."""

from __future__ import annotations

import time

import grpc
import numpy as np
import pytest

from modelplatform.testing import ServerProcess
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc

from ...conftest import MODEL_REPOSITORY
from .scraping import OIP_BODY, TFS_BODY, Samples, call, scrape

MAX_BODY = 64 * 1024
FAILURE = "nv_inference_request_failure"
BY_PROTOCOL = "modelplatform_requests"


@pytest.fixture(scope="module")
def server():
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple",
            "--max-request-bytes", str(MAX_BODY))  # fmt: skip
    with ServerProcess(*args) as running:
        yield running


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels`` (over versions, say)."""
    return sum(
        value for (sample, pairs), value in samples.items()
        if sample == name and labels.items() <= dict(pairs).items()
    )  # fmt: skip


def counted(server: ServerProcess, act, settle_s: float = 0.0) -> dict[str, float]:
    """What ``act()`` added: failures OTHER and successes by model, requests by protocol.

    ``settle_s``: a gRPC abort reaches the client as the handler unwinds, so its count may
    land just after the answer; the scrape is repeated until something changed.
    """
    _, before = scrape(server.metrics_port)
    act()
    deadline = time.monotonic() + settle_s
    while True:
        _, after = scrape(server.metrics_port)
        changes = _changes(before, after)
        if changes or time.monotonic() > deadline:
            return changes
        time.sleep(0.05)


def _changes(before: Samples, after: Samples) -> dict[str, float]:
    keys = {
        f"{family}|{labels}": (family, dict(pair.split("=") for pair in labels.split(",")))
        for family in (FAILURE, "nv_inference_request_success", BY_PROTOCOL)
        for labels in ("model=simple", "model=")
    }
    changes = {}
    for key, (family, labels) in keys.items():
        changes[key] = total(after, family, **labels) - total(before, family, **labels)
    for protocol in ("oip_http", "oip_grpc", "tfserving_rest", "tfserving_grpc", "grps_http", "grps_grpc"):
        for outcome in ("success", "failure"):
            changes[f"{protocol}:{outcome}"] = total(
                after, BY_PROTOCOL, protocol=protocol, outcome=outcome
            ) - total(before, BY_PROTOCOL, protocol=protocol, outcome=outcome)
    return {key: change for key, change in changes.items() if change}


def one_refusal(model: str, protocol: str) -> dict[str, float]:
    return {
        f"{FAILURE}|model={model}": 1,
        f"{BY_PROTOCOL}|model={model}": 1,
        f"{protocol}:failure": 1,
    }


def http(server: ServerProcess, path: str, body: str | bytes, status: int):
    def act() -> None:
        answer = call(server.http_port, "POST", path, body)
        assert answer[0] == status, answer

    return act


def test_bad_json_to_oip_infer_counts_under_its_model(server):
    act = http(server, "/v2/models/simple/infer", "{not json", 400)
    assert counted(server, act) == one_refusal("simple", "oip_http")


def test_tfserving_predict_of_an_unknown_model_counts_under_no_model(server):
    act = http(server, "/v1/models/no_such_model:predict", TFS_BODY, 404)
    assert counted(server, act) == one_refusal("", "tfserving_rest")


def test_tfserving_predict_with_bad_json_counts_under_its_model(server):
    act = http(server, "/v1/models/simple:predict", '{"inputs": [', 400)
    assert counted(server, act) == one_refusal("simple", "tfserving_rest")


def test_grps_predict_with_bad_json_counts_under_no_model(server):
    def act() -> None:
        assert call(server.http_port, "POST", "/grps/v1/infer/predict", "{not json")[0] >= 400

    assert counted(server, act) == one_refusal("", "grps_http")


def test_body_over_the_limit_counts_under_its_model(server):
    act = http(server, "/v2/models/simple/infer", b" " * (MAX_BODY * 2), 413)
    assert counted(server, act) == one_refusal("simple", "oip_http")


def _model_infer(server: ServerProcess, datatype: str) -> None:
    row = np.arange(16, dtype=np.int32).tobytes()
    request = pb.ModelInferRequest(
        model_name="simple",
        inputs=[pb.ModelInferRequest.InferInputTensor(name=n, datatype=datatype, shape=[1, 16])
                for n in ("INPUT0", "INPUT1")],
        raw_input_contents=[row, row],
    )  # fmt: skip
    with grpc.insecure_channel(server.grpc_url) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            pb_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request, timeout=30)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize(
    "datatype",
    [
        "NOT_A_TYPE",  # refused while decoding, before the dataplane is asked
        "FP32",  # a known type the model does not take: the dataplane refuses (and counts) it
    ],
)
def test_grpc_model_infer_with_a_wrong_datatype_counts_once(server, datatype):
    assert counted(server, lambda: _model_infer(server, datatype), 10) == one_refusal("simple", "oip_grpc")
    time.sleep(0.5)  # and nothing more lands later
    assert counted(server, lambda: None) == {}


def test_a_success_counts_once(server):
    act = http(server, "/v2/models/simple/infer", OIP_BODY, 200)
    assert counted(server, act) == {
        "nv_inference_request_success|model=simple": 1,
        f"{BY_PROTOCOL}|model=simple": 1,
        "oip_http:success": 1,
    }


def test_health_and_metadata_errors_are_not_inference(server):
    def act() -> None:
        assert call(server.http_port, "GET", "/v2/models/no_such_model")[0] == 404
        assert call(server.http_port, "GET", "/v2/models/simple/versions/9/ready")[0] == 400

    assert counted(server, act) == {}


@pytest.mark.parametrize("model", ["simple", "no_such_model"])
def test_tfserving_grpc_predict_refused_by_the_dialect_counts_once(server, model):
    """An unknown model (TF Serving resolves names itself) and, for a known one, a request
    without inputs: both refused before the dataplane is asked."""
    from modelplatform_tfserving.protos import services_pb2_grpc as services
    from modelplatform_tfserving.protos import serving_apis_pb2 as apis

    def act() -> None:
        request = apis.PredictRequest()
        request.model_spec.name = model
        with grpc.insecure_channel(server.grpc_url) as channel:
            with pytest.raises(grpc.RpcError):
                services.PredictionServiceStub(channel).Predict(request, timeout=30)

    label = "" if model == "no_such_model" else model
    assert counted(server, act, 10) == one_refusal(label, "tfserving_grpc")
    time.sleep(0.5)
    assert counted(server, lambda: None) == {}


def _grps_message(model: str, body: bytes):
    from modelplatform_grps.protos.grps_pb2 import GrpsMessage

    return GrpsMessage(model=model, bin_data=body)


def test_grps_grpc_predict_answered_in_band_counts_once(server):
    """grps answers every failure with gRPC OK and the code in its message: the dialect
    counts it; an unknown model counts under model ""."""
    from modelplatform_grps.protos import grps_pb2_grpc

    def act() -> None:
        with grpc.insecure_channel(server.grpc_url) as channel:
            reply = grps_pb2_grpc.GrpsServiceStub(channel).Predict(
                _grps_message("no_such_model", b"x"), timeout=30
            )
        assert reply.status.code >= 400, reply

    assert counted(server, act) == one_refusal("", "grps_grpc")


def test_stream_infer_refusals_count_once_each(server):
    """ModelStreamInfer answers a refused request in the stream: each counts once."""

    def requests():
        for datatype in ("NOT_A_TYPE", "FP32"):
            row = np.arange(16, dtype=np.int32).tobytes()
            yield pb.ModelInferRequest(
                model_name="simple",
                inputs=[pb.ModelInferRequest.InferInputTensor(name=n, datatype=datatype, shape=[1, 16])
                        for n in ("INPUT0", "INPUT1")],
                raw_input_contents=[row, row],
            )  # fmt: skip

    def act() -> None:
        with grpc.insecure_channel(server.grpc_url) as channel:
            replies = list(pb_grpc.GRPCInferenceServiceStub(channel).ModelStreamInfer(requests(), timeout=30))
        assert [bool(reply.error_message) for reply in replies] == [True, True]

    assert counted(server, act) == {
        f"{FAILURE}|model=simple": 2, f"{BY_PROTOCOL}|model=simple": 2, "oip_grpc:failure": 2,
    }  # fmt: skip


@pytest.mark.parametrize("body", [b"not gzip at all", None], ids=["corrupt", "inflates-past-the-limit"])
def test_a_body_that_does_not_inflate_counts_under_its_model(server, body):
    import gzip
    import http.client

    payload = body if body is not None else gzip.compress(b" " * (MAX_BODY * 4))

    def act() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
        try:
            connection.request("POST", "/v2/models/simple/infer", body=payload,
                               headers={"Content-Encoding": "gzip"})  # fmt: skip
            reply = connection.getresponse()
            assert reply.status in (400, 413), reply.read()
        finally:
            connection.close()

    assert counted(server, act) == one_refusal("simple", "oip_http")
