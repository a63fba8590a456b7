"""oip-grpc on the wire with our own generated stubs: typed contents, bad input, health."""

from __future__ import annotations

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc

MiB = 1024 * 1024
UNLIMITED = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]


@pytest.fixture(scope="module")
def channel(server):
    with grpc.insecure_channel(server.grpc_url, options=UNLIMITED) as ch:
        yield ch


@pytest.fixture(scope="module")
def stub(channel):
    return pb_grpc.GRPCInferenceServiceStub(channel)


def _simple_request(raw: list[bytes] | None = None, shape=(1, 16)) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="simple", id="req-1")
    for name in ("INPUT0", "INPUT1"):
        request.inputs.add(name=name, datatype="INT32", shape=shape)
    if raw is not None:
        request.raw_input_contents.extend(raw)
    return request


def _assert_still_serving(stub) -> None:
    ones = np.ones(16, np.int32).tobytes()
    reply = stub.ModelInfer(_simple_request([ones, ones]), timeout=10)
    assert np.frombuffer(reply.raw_output_contents[0], "<i4").tolist() == [2] * 16


def _code(call) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value.code(), caught.value.details()


@pytest.mark.hook("register_grpc_services")
def test_typed_contents_in_raw_contents_out(stub):
    request = _simple_request()
    request.inputs[0].contents.int_contents.extend(range(16))
    request.inputs[1].contents.int_contents.extend([5] * 16)
    request.parameters["note"].double_param = 0.5
    request.parameters["big"].uint64_param = 2**64 - 1
    reply = stub.ModelInfer(request, timeout=10)
    assert reply.id == "req-1" and reply.model_version == "1"
    assert [o.name for o in reply.outputs] == ["OUTPUT0", "OUTPUT1"]
    assert list(reply.outputs[0].shape) == [1, 16]
    total = np.frombuffer(reply.raw_output_contents[0], "<i4")
    assert total.tolist() == [i + 5 for i in range(16)]


def test_raw_size_not_matching_shape(stub):
    code, details = _code(lambda: stub.ModelInfer(_simple_request([b"\0" * 60, b"\0" * 64])))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "INPUT0" in details and "60 bytes" in details
    _assert_still_serving(stub)


def test_raw_entry_count_not_matching_inputs(stub):
    code, details = _code(lambda: stub.ModelInfer(_simple_request([b"\0" * 64])))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "1 entries for 2 inputs" in details


def test_over_16_mib_request_with_wrong_sizes(stub):
    big = b"\1" * (17 * MiB)
    code, details = _code(lambda: stub.ModelInfer(_simple_request([big, big]), timeout=60))
    assert code == grpc.StatusCode.INVALID_ARGUMENT  # not RESOURCE_EXHAUSTED: limits are lifted
    assert "INPUT0" in details
    _assert_still_serving(stub)


def test_fp16_typed_contents_refused(stub):
    request = pb.ModelInferRequest(model_name="identity_fp16")
    request.inputs.add(name="INPUT0", datatype="FP16", shape=[2]).contents.fp32_contents.extend([1, 2])
    code, details = _code(lambda: stub.ModelInfer(request))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "raw_input_contents" in details


@pytest.mark.parametrize(
    "count, raw, message",
    [
        (1, b"\x05\x00\x00\x00ab", "runs past the end"),
        (2, b"\x01\x00\x00\x00a\x01\x00\x00\x00b\x00", "trailing"),
        (2, b"\x01\x00", "cannot hold"),
    ],
)
def test_malformed_bytes_length_prefixes(stub, count, raw, message):
    request = pb.ModelInferRequest(model_name="identity_bytes")
    request.inputs.add(name="INPUT0", datatype="BYTES", shape=[count])
    request.raw_input_contents.append(raw)
    code, details = _code(lambda: stub.ModelInfer(request))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert message in details


def test_huge_shape_refused_before_allocating(stub):
    request = pb.ModelInferRequest(model_name="identity_bytes")
    request.inputs.add(name="INPUT0", datatype="BYTES", shape=[2**40])
    request.raw_input_contents.append(b"")
    code, details = _code(lambda: stub.ModelInfer(request))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "over the limit" in details


def test_model_config_is_the_config_message(stub):
    reply = stub.ModelConfig(pb.ModelConfigRequest(name="simple"), timeout=10)
    assert reply.config.name == "simple"
    assert reply.config.max_batch_size == 8
    assert [i.name for i in reply.config.input] == ["INPUT0", "INPUT1"]


def test_statistics_for_unknown_version(stub):
    code, _ = _code(lambda: stub.ModelStatistics(pb.ModelStatisticsRequest(name="simple", version="9")))
    assert code == grpc.StatusCode.NOT_FOUND


def test_health_check(channel):
    health = health_pb2_grpc.HealthStub(channel)
    reply = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    named = health_pb2.HealthCheckRequest(service="inference.GRPCInferenceService")
    assert health.Check(named, timeout=10).status == health_pb2.HealthCheckResponse.SERVING
    code, _ = _code(lambda: health.Check(health_pb2.HealthCheckRequest(service="nope"), timeout=10))
    assert code == grpc.StatusCode.NOT_FOUND
