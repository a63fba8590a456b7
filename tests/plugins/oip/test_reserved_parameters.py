"""Request parameters named ``triton_...``, as Triton's front ends treat them. On ModelInfer,
``triton_enable_empty_final_response`` must be a bool and never reaches the model (on unary
calls too, where perf_analyzer sends it); any other such key is refused. Over HTTP every
such request parameter is refused (JSON and binary bodies); input parameters are not checked."""

from __future__ import annotations

import json
import textwrap
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest

from modelplatform.testing import ServerProcess
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc

MODEL_PY = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor("PARAMS", np.array([r.parameters()], dtype=object))]
            )
            for r in requests
        ]
"""

CONFIG = """
name: "params"
backend: "python"
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "PARAMS" data_type: TYPE_STRING dims: [ 1 ] } ]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[ServerProcess]:
    root: Path = tmp_path_factory.mktemp("reserved")
    (root / "params" / "1").mkdir(parents=True)
    (root / "params" / "config.pbtxt").write_text(CONFIG)
    (root / "params" / "1" / "model.py").write_text(textwrap.dedent(MODEL_PY))
    with ServerProcess("--model-repository", str(root)) as running:
        yield running


@pytest.fixture(scope="module")
def stub(server: ServerProcess) -> Iterator[pb_grpc.GRPCInferenceServiceStub]:
    with grpc.insecure_channel(server.grpc_url) as channel:
        yield pb_grpc.GRPCInferenceServiceStub(channel)


def _call(**parameters: pb.InferParameter) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="params")
    request.inputs.add(name="INPUT0", datatype="INT32", shape=[1])
    request.raw_input_contents.append(np.array([1], "<i4").tobytes())
    for key, value in parameters.items():
        request.parameters[key].CopyFrom(value)
    return request


def _seen(reply: pb.ModelInferResponse) -> dict:
    raw = reply.raw_output_contents[0]
    return json.loads(raw[4 : 4 + int.from_bytes(raw[:4], "little")])


def test_the_empty_final_flag_never_reaches_the_model(stub) -> None:
    flag = pb.InferParameter(bool_param=True)
    for _ in range(3):  # decoded, then repeated from its template
        reply = stub.ModelInfer(
            _call(triton_enable_empty_final_response=flag, mine=pb.InferParameter(int64_param=3)), timeout=10
        )
        assert _seen(reply) == {"mine": 3}


def test_the_empty_final_flag_must_be_a_bool(stub) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        stub.ModelInfer(
            _call(triton_enable_empty_final_response=pb.InferParameter(int64_param=1)), timeout=10
        )
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "invalid value type for 'triton_enable_empty_final_response' parameter" in refused.value.details()


def test_other_triton_keys_are_refused(stub) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        stub.ModelInfer(_call(triton_mine=pb.InferParameter(bool_param=True)), timeout=10)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "keys starting with 'triton_' are reserved for Triton usage" in refused.value.details()
    assert _seen(stub.ModelInfer(_call(), timeout=10)) == {}


def _http_infer(
    server: ServerProcess, body: bytes, headers: dict[str, str] | None = None
) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"http://{server.http_url}/v2/models/params/infer", data=body, method="POST", headers=headers or {}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _json_body(parameters: dict, input_parameters: dict | None = None) -> dict:
    tensor = {"name": "INPUT0", "datatype": "INT32", "shape": [1], "data": [1]}
    if input_parameters:
        tensor["parameters"] = input_parameters
    return {"inputs": [tensor], "parameters": parameters}


RESERVED_HTTP = (
    "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified."
)


def test_http_refuses_every_triton_request_parameter(server: ServerProcess) -> None:
    for key in ("triton_mine", "triton_enable_empty_final_response"):  # HTTP allows none of them
        status, answer = _http_infer(server, json.dumps(_json_body({key: True, "mine": 1})).encode())
        assert status == 400 and answer["error"].endswith(RESERVED_HTTP)
    status, answer = _http_infer(server, json.dumps(_json_body({"mine": 1})).encode())
    assert status == 200 and json.loads(answer["outputs"][0]["data"][0]) == {"mine": 1}


def test_http_binary_bodies_are_refused_alike(server: ServerProcess) -> None:
    tensor = {"name": "INPUT0", "datatype": "INT32", "shape": [1], "parameters": {"binary_data_size": 4}}
    header = json.dumps({"inputs": [tensor], "parameters": {"triton_x": 1}}).encode()
    body = header + np.array([1], "<i4").tobytes()
    status, answer = _http_infer(server, body, {"Inference-Header-Content-Length": str(len(header))})
    assert status == 400 and answer["error"].endswith(RESERVED_HTTP)


def test_http_input_parameters_named_triton_are_not_checked(server: ServerProcess) -> None:
    body = _json_body({}, input_parameters={"triton_note": "kept"})
    status, answer = _http_infer(server, json.dumps(body).encode())
    assert status == 200 and json.loads(answer["outputs"][0]["data"][0]) == {}
