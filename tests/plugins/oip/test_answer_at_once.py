"""Calls answered at once (``Inference.infer_now``): a cheap Triton python model, measured
inline, answers a repeated ModelInfer call without a coroutine of the dataplane's. Whatever
cannot be answered so returns None having counted nothing, and takes ``infer``'s path; what
is answered so is counted, and fails, as ``infer`` counts and fails it.
"""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import grpc
import numpy as np
import pytest

from modelplatform import InferenceRequest, InvalidArgument, ModelExecutionError, Settings, Tensor
from modelplatform.testing import InProcessServer, free_port
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc

CONFIG = """
name: "{name}"
backend: "python"
input [ {{ name: "IN" data_type: TYPE_FP32 dims: [ -1 ] }} ]
output [ {{ name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] }} ]
"""
#: Adds one; the first value picks a failure: -1 raises, -2 answers an error, 99 calls "callee".
ADD_ONE = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [self.answer(r) for r in requests]

    def answer(self, request):
        values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
        if values[0] == -1:
            raise ValueError("minus one")
        if values[0] == -2:
            return pb_utils.InferenceResponse(error=pb_utils.TritonError("minus two", pb_utils.TritonError.INVALID_ARG))
        if values[0] == 99:
            nested = pb_utils.InferenceRequest(model_name="callee", requested_output_names=["OUT"], inputs=[pb_utils.Tensor("IN", values)])
            return pb_utils.InferenceResponse([pb_utils.Tensor("OUT", nested.exec().output_tensors()[0].as_numpy())])
        return pb_utils.InferenceResponse([pb_utils.Tensor("OUT", values + 1)])
"""
CALLEE = """
class Model:
    def infer(self, inputs):
        return {"OUT": inputs["IN"] + 10}
"""
#: The calls a model's instance runs on its thread before it may run inline (calls.py).
MEASURED_CALLS = 4
#: At most this many calls until the model runs inline: a slow first call on a busy machine
#: keeps it on its thread until the average comes down (calls.py).
MAX_CALLS_TO_INLINE = 300
LAYOUT = ("test", "IN")


@pytest.fixture
async def server(tmp_path: Path):
    for name, source in (("add_one", ADD_ONE), ("callee", CALLEE)):
        (tmp_path / name / "1").mkdir(parents=True)
        (tmp_path / name / "config.pbtxt").write_text(CONFIG.format(name=name))
        (tmp_path / name / "1" / "model.py").write_text(textwrap.dedent(source))
    settings = Settings(
        model_repository=tmp_path,
        host="127.0.0.1",
        http_port=free_port(),
        grpc_port=free_port(),
        plugins=("python", "oip-grpc"),
        drain_delay_secs=0,
    )
    async with InProcessServer(settings) as running:
        yield running


def _request(*values: float, **parameters: object) -> InferenceRequest:
    tensor = Tensor.from_array("IN", np.array(values, np.float32))
    return InferenceRequest("add_one", [tensor], parameters=dict(parameters), layout=LAYOUT)


async def _measured(server: InProcessServer) -> None:
    """Past the calls measured on the thread, until the model runs inline (one call answered
    at once shows it)."""
    inference = server.context.dataplane.inference
    for _ in range(MAX_CALLS_TO_INLINE):
        await inference.infer(_request(1.0))
        if inference.infer_now(_request(1.0)) is not None:
            return
    raise AssertionError(f"add_one never ran inline in {MAX_CALLS_TO_INLINE} calls")


def _stats(server: InProcessServer) -> dict:
    return server.running.models.get("add_one").stats.to_json()


async def test_a_measured_cheap_model_answers_at_once_and_is_counted(server):
    inference = server.context.dataplane.inference
    assert inference.infer_now(_request(1.0)) is None  # not measured yet: nothing counted
    assert _stats(server)["inference_stats"]["success"]["count"] == 0
    await _measured(server)
    before = _stats(server)
    response = inference.infer_now(_request(1.0, 2.0))
    assert response is not None
    assert response.output("OUT").data.tolist() == [2.0, 3.0]
    assert (response.model_name, response.model_version) == ("add_one", "1")
    after = _stats(server)
    for counted in ("success", "queue", "compute_infer"):
        assert after["inference_stats"][counted]["count"] == before["inference_stats"][counted]["count"] + 1
    assert after["execution_count"] == before["execution_count"] + 1
    assert after["inference_count"] == before["inference_count"] + 1


async def test_what_cannot_answer_at_once_counts_nothing(server):
    inference = server.context.dataplane.inference
    await _measured(server)
    before = _stats(server)
    assert inference.infer_now(_request(1.0, timeout=1000)) is None  # parameters: infer's checks
    unknown = InferenceRequest("add_one", [Tensor.from_array("IN", np.ones(1, np.float32))], layout=("new",))
    assert inference.infer_now(unknown) is None  # a layout not checked yet
    assert inference.infer_now(InferenceRequest("missing", [], layout=LAYOUT)) is None  # infer() refuses it
    assert _stats(server) == before


async def test_errors_at_once_are_the_errors_infer_raises_and_counted_alike(server):
    inference = server.context.dataplane.inference
    with pytest.raises(ModelExecutionError) as slow_raise:
        await inference.infer(_request(-1.0))
    with pytest.raises(InvalidArgument) as slow_error:
        await inference.infer(_request(-2.0))
    await _measured(server)
    with pytest.raises(ModelExecutionError) as now_raise:
        inference.infer_now(_request(-1.0))
    with pytest.raises(InvalidArgument) as now_error:
        inference.infer_now(_request(-2.0))
    assert (str(now_raise.value), str(now_error.value)) == (str(slow_raise.value), str(slow_error.value))
    assert _stats(server)["inference_stats"]["fail"]["count"] == 4
    assert inference.infer_now(_request(5.0)).output("OUT").data.tolist() == [6.0]  # still serving


async def test_a_nested_call_found_inline_goes_back_to_infer_and_its_thread(server):
    inference = server.context.dataplane.inference
    await _measured(server)
    before = _stats(server)["inference_stats"]["success"]["count"]
    assert inference.infer_now(_request(99.0)) is None  # exec() would block the loop
    assert _stats(server)["inference_stats"]["success"]["count"] == before
    response = await inference.infer(_request(99.0))  # run again, on the instance's thread
    assert response.output("OUT").data.tolist() == [109.0]
    assert inference.infer_now(_request(1.0)) is None  # it stays there


def _call(port: int, *values: float) -> pb.ModelInferResponse:
    message = pb.ModelInferRequest(model_name="add_one")
    message.inputs.add(name="IN", datatype="FP32", shape=[len(values)])
    message.raw_input_contents.append(np.array(values, "<f4").tobytes())
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        return pb_grpc.GRPCInferenceServiceStub(channel).ModelInfer(message, timeout=10)


async def test_repeated_grpc_calls_answer_and_fail_as_the_first_ones(server):
    port = server.context.settings.grpc_port
    codes = []
    for _ in range(MEASURED_CALLS + 4):  # templated after the first, inline after the measured ones
        reply = await asyncio.to_thread(_call, port, 1.0, 2.0)
        assert np.frombuffer(reply.raw_output_contents[0], "<f4").tolist() == [2.0, 3.0]
        for failing in (-1.0, -2.0):
            with pytest.raises(grpc.RpcError) as refused:
                await asyncio.to_thread(_call, port, failing, 0.0)
            codes.append((refused.value.code(), refused.value.details()))
    assert len(set(codes)) == 2, codes  # each failure answered alike, templated, inline or not
    assert {code for code, _ in codes} == {grpc.StatusCode.INTERNAL, grpc.StatusCode.INVALID_ARGUMENT}
    reply = await asyncio.to_thread(_call, port, 99.0, 0.0)  # a nested call from the repeated path
    assert np.frombuffer(reply.raw_output_contents[0], "<f4").tolist() == [109.0, 10.0]
    assert _stats(server)["inference_stats"]["success"]["count"] == MEASURED_CALLS + 5
