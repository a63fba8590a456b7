"""A decoupled model over grps streaming (gRPC and HTTP), and refused by unary calls."""

from __future__ import annotations

import grpc
import httpx
import orjson
import pytest

from modelplatform_grps.protos import grps_pb2_grpc
from modelplatform_grps.protos.grps_pb2 import GrpsMessage, Status


@pytest.fixture(scope="module")
def http(server):
    with httpx.Client(base_url=f"http://{server.http_url}", timeout=60) as client:
        yield client


def _words_request(text: str) -> GrpsMessage:
    request = GrpsMessage(model="word_stream")
    request.gmap.s_s["text_input"] = text
    return request


def test_grps_grpc_streams_a_decoupled_model(server):
    with grpc.insecure_channel(server.grpc_url) as channel:
        stub = grps_pb2_grpc.GrpsServiceStub(channel)
        replies = list(stub.PredictStreaming(_words_request("to be or")))
    assert [r.status.status for r in replies] == [Status.SUCCESS] * 3
    assert [list(r.gtensors.tensors[0].flat_string) for r in replies] == [["to"], ["be"], ["or"]]


def test_grps_http_streams_a_decoupled_model(http):
    body = {"model": "word_stream", "gmap": {"s_s": {"text_input": "not to be"}}}
    with http.stream("POST", "/grps/v1/infer/predict?streaming=true", json=body) as reply:
        assert reply.status_code == 200
        chunks = b"".join(reply.iter_bytes())
    # One GrpsMessage JSON per response, written back to back (grps's framing).
    messages = orjson.loads(b"[" + chunks.replace(b"}{", b"},{") + b"]")
    assert [m["status"]["status"] for m in messages] == ["SUCCESS"] * 3
    words = [m["gtensors"]["tensors"][0]["flat_string"] for m in messages]
    assert words == [["not"], ["to"], ["be"]]


def test_http_infer_to_a_decoupled_model_gets_tritons_error(http):
    body = {"inputs": [{"name": "text_input", "shape": [1], "datatype": "BYTES", "data": ["a b"]}]}
    reply = http.post("/v2/models/word_stream/infer", json=body)
    assert reply.status_code == 501  # Triton: UNSUPPORTED -> 501 Not Implemented
    assert reply.json() == {
        "error": "HTTP end point doesn't support models with decoupled transaction policy"
    }


def test_grps_unary_predict_to_a_decoupled_model_is_refused(server):
    with grpc.insecure_channel(server.grpc_url) as channel:
        reply = grps_pb2_grpc.GrpsServiceStub(channel).Predict(_words_request("a b"))
    assert reply.status.status == Status.FAILURE
    assert "doesn't support models with decoupled transaction policy" in reply.status.msg


def test_a_refused_unary_call_is_counted_as_a_failure(http):
    stats = http.get("/v2/models/word_stream/stats").json()["model_stats"][0]["inference_stats"]
    assert stats["fail"]["count"] >= 1
