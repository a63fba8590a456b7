"""grps over gRPC with stubs generated from our proto, against a real server."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
import yaml

from modelplatform.testing import ServerProcess
from modelplatform_grps.protos import grps_pb2, grps_pb2_grpc
from modelplatform_grps.protos.grps_pb2 import GenericTensor, GrpsMessage, Status

from .conftest import call, call_json


@pytest.fixture(scope="module")
def stub(grps_server: ServerProcess) -> Iterator[grps_pb2_grpc.GrpsServiceStub]:
    with grpc.insecure_channel(grps_server.grpc_url) as channel:
        yield grps_pb2_grpc.GrpsServiceStub(channel)


def _ok(message: GrpsMessage) -> bool:
    return message.status == Status(code=200, msg="OK", status=Status.SUCCESS)


def test_health_rpcs(stub: grps_pb2_grpc.GrpsServiceStub) -> None:
    assert _ok(stub.CheckLiveness(GrpsMessage()))
    assert _ok(stub.CheckReadiness(GrpsMessage()))


def test_offline_over_grpc_is_seen_over_http(
    stub: grps_pb2_grpc.GrpsServiceStub, grps_server: ServerProcess
) -> None:
    try:
        assert _ok(stub.Offline(GrpsMessage()))
        reply = stub.CheckReadiness(GrpsMessage())
        assert reply.status.status == Status.FAILURE and reply.status.code == 503
        assert call_json(grps_server, "GET", "/grps/v1/health/ready")[0] == 503
        assert call(grps_server, "GET", "/v2/health/ready")[0] == 400
    finally:
        assert _ok(stub.Online(GrpsMessage()))
    assert _ok(stub.CheckReadiness(GrpsMessage()))
    assert call_json(grps_server, "GET", "/grps/v1/health/ready")[0] == 200


def test_predict_str_data_and_bin_data_answer_in_kind(stub: grps_pb2_grpc.GrpsServiceStub) -> None:
    reply = stub.Predict(GrpsMessage(model="identity_bytes-1", str_data="héllo"))
    assert _ok(reply) and reply.WhichOneof("data_oneof") == "str_data" and reply.str_data == "héllo"
    reply = stub.Predict(GrpsMessage(model="identity_bytes", bin_data=b"\x00\xff\x01"))
    assert _ok(reply) and reply.bin_data == b"\x00\xff\x01"


def test_predict_gtensors(stub: grps_pb2_grpc.GrpsServiceStub) -> None:
    request = GrpsMessage(model="simple-1")
    for name, values in (("INPUT0", list(range(16))), ("INPUT1", [2] * 16)):
        request.gtensors.tensors.append(
            GenericTensor(name=name, dtype=grps_pb2.DT_INT32, shape=[1, 16], flat_int32=values)
        )
    reply = stub.Predict(request)
    assert _ok(reply)
    out = {t.name: t for t in reply.gtensors.tensors}
    assert list(out["OUTPUT0"].flat_int32) == [i + 2 for i in range(16)]
    assert list(out["OUTPUT1"].shape) == [1, 16] and out["OUTPUT1"].dtype == grps_pb2.DT_INT32


def test_predict_default_model_and_fp32(stub: grps_pb2_grpc.GrpsServiceStub) -> None:
    request = GrpsMessage()
    request.gtensors.tensors.add(dtype=grps_pb2.DT_FLOAT32, shape=[3], flat_float32=[1.5, 2, 3])
    reply = stub.Predict(request)  # default_model = identity_fp32-1, unnamed tensor = first input
    assert _ok(reply)
    assert list(reply.gtensors.tensors[0].flat_float32) == [1.5, 2.0, 3.0]


def test_predict_errors_are_in_band(stub: grps_pb2_grpc.GrpsServiceStub) -> None:
    reply = stub.Predict(GrpsMessage(model="nope", str_data="x"))
    assert reply.status.status == Status.FAILURE and reply.status.code == 404
    reply = stub.Predict(GrpsMessage(model="identity_bytes"))
    assert reply.status.code == 400 and "No legal field" in reply.status.msg
    reply = stub.Predict(GrpsMessage(model="simple", str_data="x"))
    assert reply.status.code == 400 and "single BYTES input" in reply.status.msg


def test_predict_streaming(stub: grps_pb2_grpc.GrpsServiceStub) -> None:
    request = GrpsMessage(model="stream_counter")
    request.gmap.s_i32["COUNT"] = 3
    replies = list(stub.PredictStreaming(request))
    assert [list(r.gtensors.tensors[0].flat_int32) for r in replies] == [[1], [2], [3]]
    assert all(_ok(r) for r in replies)


def test_predict_streaming_error_ends_with_failure(stub: grps_pb2_grpc.GrpsServiceStub) -> None:
    request = GrpsMessage(model="stream_fail")
    request.gmap.s_i32["COUNT"] = 1
    replies = list(stub.PredictStreaming(request))
    assert len(replies) == 3 and all(_ok(r) for r in replies[:2])
    assert replies[2].status.status == Status.FAILURE and "broke after two" in replies[2].status.msg


def test_metadata_rpcs(stub: grps_pb2_grpc.GrpsServiceStub) -> None:
    reply = stub.ServerMetadata(GrpsMessage())
    assert _ok(reply) and yaml.safe_load(reply.str_data)["server"]["name"] == "modelplatform"
    reply = stub.ModelMetadata(GrpsMessage(str_data="identity_bytes"))
    assert _ok(reply) and yaml.safe_load(reply.str_data)["input"][0]["data_type"] == "TYPE_STRING"
    reply = stub.ModelMetadata(GrpsMessage(str_data="nope"))
    assert reply.status.code == 404 and reply.status.status == Status.FAILURE
    assert stub.ModelMetadata(GrpsMessage()).status.code == 400
