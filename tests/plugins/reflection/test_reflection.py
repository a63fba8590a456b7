"""gRPC server reflection (issue 33): every loaded service listed and described with
grpcio-reflection's own client, ModelInfer called from the reflected descriptors alone,
v1 beside v1alpha, on by default, off with --no-grpc-reflection, restricted as category docs."""

from __future__ import annotations

import grpc
import numpy as np
import pytest
from google.protobuf import descriptor_pool, message_factory
from grpc_reflection.v1alpha import reflection_pb2
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from modelplatform.testing import ServerProcess

from ...conftest import MODEL_REPOSITORY

LOADED = {
    "inference.GRPCInferenceService", "tensorflow.serving.PredictionService", "tensorflow.serving.ModelService",
    "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection", "grpc.reflection.v1.ServerReflection",
}  # fmt: skip


def serve(*args: str) -> ServerProcess:
    return ServerProcess("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple", *args)


def listed(channel: grpc.Channel, version: str, metadata: tuple[tuple[str, str], ...] = ()) -> list[str]:
    """list_services over one reflection version's stream (its messages are the same on both)."""
    call = channel.stream_stream(
        f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
        request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )
    answers = call(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=30, metadata=metadata
    )
    return [service.name for answer in answers for service in answer.list_services_response.service]


@pytest.fixture(scope="module")
def server():
    with serve() as running:
        yield running


def test_every_loaded_service_is_listed_and_described(server: ServerProcess) -> None:
    with grpc.insecure_channel(server.grpc_url) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        services = set(database.get_services())
        assert LOADED <= services
        grps = [name for name in services if name.startswith("grps")]
        assert grps, services
        pool = descriptor_pool.DescriptorPool(database)
        for name in services:
            assert pool.FindServiceByName(name).methods, name
        oip = pool.FindServiceByName("inference.GRPCInferenceService").methods_by_name
        assert {"ModelInfer", "ModelMetadata", "RepositoryModelLoad"} <= set(oip)
        predict = pool.FindServiceByName("tensorflow.serving.PredictionService").methods_by_name["Predict"]
        assert predict.input_type.full_name == "tensorflow.serving.PredictRequest"
        assert "inputs" in predict.input_type.fields_by_name  # from TF Serving's own pool


def test_model_infer_from_the_reflected_descriptors_alone(server: ServerProcess) -> None:
    with grpc.insecure_channel(server.grpc_url) as channel:
        pool = descriptor_pool.DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
        method = pool.FindServiceByName("inference.GRPCInferenceService").methods_by_name["ModelInfer"]
        request_class = message_factory.GetMessageClass(method.input_type)
        response_class = message_factory.GetMessageClass(method.output_type)
        request = request_class(model_name="simple")
        row = list(range(16))
        for name in ("INPUT0", "INPUT1"):
            tensor = request.inputs.add(name=name, datatype="INT32", shape=[1, 16])
            tensor.contents.int_contents.extend(row)
        infer = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                                    request_serializer=request_class.SerializeToString,
                                    response_deserializer=response_class.FromString)  # fmt: skip
        response = infer(request, timeout=30)
        outputs = {output.name: index for index, output in enumerate(response.outputs)}
        total = np.frombuffer(response.raw_output_contents[outputs["OUTPUT0"]], dtype=np.int32)
        assert total.tolist() == [2 * value for value in row]


def test_v1_lists_what_v1alpha_lists(server: ServerProcess) -> None:
    with grpc.insecure_channel(server.grpc_url) as channel:
        assert sorted(listed(channel, "v1")) == sorted(listed(channel, "v1alpha"))
        pool = descriptor_pool.DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
        v1 = pool.FindServiceByName("grpc.reflection.v1.ServerReflection")
        assert v1.methods_by_name["ServerReflectionInfo"].input_type.full_name == (
            "grpc.reflection.v1.ServerReflectionRequest"
        )


def test_reflection_can_be_turned_off() -> None:
    with serve("--no-grpc-reflection") as running, grpc.insecure_channel(running.grpc_url) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            listed(channel, "v1alpha")
        assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_reflection_follows_the_grpc_restrictions() -> None:
    with serve("--grpc-restricted-protocol", "docs:docs-key=open") as running, \
            grpc.insecure_channel(running.grpc_url) as channel:  # fmt: skip
        with pytest.raises(grpc.RpcError) as refused:
            listed(channel, "v1")
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "triton-grpc-protocol-docs-key" in (refused.value.details() or "")
        assert "inference.GRPCInferenceService" in listed(
            channel, "v1", (("triton-grpc-protocol-docs-key", "open"),)
        )
