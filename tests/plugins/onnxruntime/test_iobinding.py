"""Outputs with a destination are written there by ONNX Runtime itself (I/O binding).

The backend is driven directly on real sessions over tiny graphs: an output
bound to its destination comes back as a view of that very memory (no array
of the backend's own); every case the binding cannot serve comes back right
through the plain run, in an array of its own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto

from modelplatform import InferenceRequest, InferenceResponse, ModelConfig, RequestedOutput, Tensor
from modelplatform_onnxruntime import iobinding
from modelplatform_onnxruntime.backend import OnnxRuntimeBackend

from .graphs import add_model, graph


def _plan(model) -> iobinding.BindingPlan:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return iobinding.plan(session.get_inputs(), session.get_outputs())


def test_the_plan_knows_fixed_and_input_derived_shapes_only():
    assert _plan(graph("Neg", [2, 3], [2, 3])).shapes["Y"].dims == (2, 3)
    assert _plan(graph("Neg", ["n", 3], ["n", 3])).shapes["Y"].dims == (("X", 0), 3)
    assert "Y" not in _plan(graph("Neg", ["n"], ["k"])).shapes  # a name no input has
    assert "Y" not in _plan(graph("NonZero", ["n"], [1, None], TensorProto.INT64)).shapes  # data-dependent
    assert "Y" not in _plan(graph("Neg", [None], [None])).shapes  # no size, no name
    strings = _plan(graph("Identity", ["n"], ["n"], TensorProto.STRING))
    assert "Y" not in strings.shapes and strings.strings == {"X", "Y"}


async def _backend(tmp_path: Path, model, dims, max_batch_size: int = 0) -> OnnxRuntimeBackend:
    add_model(tmp_path, "m", model, dims, max_batch_size)
    config = ModelConfig.from_json(
        {"name": "m", "platform": "onnxruntime_onnx", "max_batch_size": max_batch_size}
    )
    backend = OnnxRuntimeBackend(config, tmp_path / "m" / "1")
    await backend.load()
    return backend


def _request(x: np.ndarray, destination: memoryview | None) -> InferenceRequest:
    return InferenceRequest(
        "m", [Tensor.from_array("X", x)], outputs=[RequestedOutput("Y", destination=destination)]
    )


async def _answer(backend: OnnxRuntimeBackend, x: np.ndarray, destination: memoryview | None) -> np.ndarray:
    (response,) = await backend.execute([_request(x, destination)])
    assert isinstance(response, InferenceResponse), response
    return response.output("Y").data


def _in(destination: bytearray, y: np.ndarray) -> bool:
    return np.shares_memory(np.frombuffer(destination, np.uint8), y)


@pytest.mark.parametrize("dims", [[4, 5], ["rows", 5], ["rows", "cols"]])
async def test_an_output_is_written_straight_into_its_destination(tmp_path, dims):
    backend = await _backend(tmp_path, graph("Neg", dims, dims), dims)
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    destination = bytearray(x.nbytes + 8)  # room to spare is fine
    y = await _answer(backend, x, memoryview(destination))
    assert _in(destination, y)
    np.testing.assert_array_equal(np.frombuffer(destination, np.float32, count=20).reshape(4, 5), -x)
    assert y.shape == (4, 5)


async def test_a_shape_known_only_after_the_run_is_copied(tmp_path):
    backend = await _backend(tmp_path, graph("Neg", ["n"], ["k"]), ["n"])
    x = np.arange(6, dtype=np.float32)
    destination = bytearray(x.nbytes)
    y = await _answer(backend, x, memoryview(destination))
    assert not _in(destination, y)
    np.testing.assert_array_equal(y, -x)


async def test_a_destination_too_small_or_misaligned_is_not_bound(tmp_path):
    backend = await _backend(tmp_path, graph("Neg", ["n"], ["n"]), ["n"])
    x = np.arange(8, dtype=np.float32)
    small = bytearray(x.nbytes - 4)
    y = await _answer(backend, x, memoryview(small))
    assert not _in(small, y) and not any(small)  # nothing written past (or into) the window
    np.testing.assert_array_equal(y, -x)
    odd = bytearray(x.nbytes + 1)
    y = await _answer(backend, x, memoryview(odd)[1:])
    assert not _in(odd, y)
    np.testing.assert_array_equal(y, -x)


async def test_without_a_destination_the_backend_allocates(tmp_path):
    backend = await _backend(tmp_path, graph("Neg", ["n"], ["n"]), ["n"])
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(await _answer(backend, x, None), -x)


async def test_an_output_shape_the_graph_declares_wrongly_falls_back_to_the_plain_run(tmp_path):
    # Transpose makes Y [cols, rows]; the graph claims [rows, cols], so the bound run fails
    model = graph("Transpose", ["rows", "cols"], ["rows", "cols"])
    backend = await _backend(tmp_path, model, ["rows", "cols"])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    destination = bytearray(x.nbytes)
    y = await _answer(backend, x, memoryview(destination))
    np.testing.assert_array_equal(y, x.T)


async def test_requests_merged_into_one_batch_take_the_copy(tmp_path):
    backend = await _backend(tmp_path, graph("Neg", ["batch", 4], ["batch", 4]), [4], max_batch_size=8)
    xs = [np.full((2, 4), i, np.float32) for i in range(3)]
    destinations = [bytearray(x.nbytes) for x in xs]
    results = await backend.execute([_request(x, memoryview(d)) for x, d in zip(xs, destinations)])
    for x, destination, result in zip(xs, destinations, results):
        assert isinstance(result, InferenceResponse)
        assert not _in(destination, result.output("Y").data)
        np.testing.assert_array_equal(result.output("Y").data, -x)


async def test_a_destination_over_an_input_is_not_bound(tmp_path):
    # written in place, Transpose would overwrite input rows it has not read yet
    backend = await _backend(
        tmp_path, graph("Transpose", ["rows", "cols"], ["cols", "rows"]), ["rows", "cols"]
    )
    shared = bytearray(4 * 64 * 32)
    x = np.frombuffer(shared, np.float32).reshape(64, 32)
    x[:] = np.arange(x.size, dtype=np.float32).reshape(64, 32)
    expected = x.T.copy()
    y = await _answer(backend, x, memoryview(shared))
    np.testing.assert_array_equal(y, expected)


async def test_two_outputs_sharing_a_window_are_not_both_bound(tmp_path):
    model = graph("Neg", ["n"], ["n"])
    model.graph.node.append(onnx.helper.make_node("Abs", ["X"], ["Z"]))
    model.graph.output.append(onnx.helper.make_tensor_value_info("Z", TensorProto.FLOAT, ["n"]))
    add_model(tmp_path, "m", model, ["n"])
    config = ModelConfig.from_json({"name": "m", "platform": "onnxruntime_onnx", "max_batch_size": 0})
    config = ModelConfig.from_json({**config.to_json(), "output": [
        {"name": name, "data_type": "TYPE_FP32", "dims": [-1]} for name in ("Y", "Z")]})  # fmt: skip
    backend = OnnxRuntimeBackend(config, tmp_path / "m" / "1")
    await backend.load()
    x = np.arange(-4, 4, dtype=np.float32)
    window = memoryview(bytearray(x.nbytes))
    wanted = [RequestedOutput("Y", destination=window), RequestedOutput("Z", destination=window)]
    (response,) = await backend.execute([InferenceRequest("m", [Tensor.from_array("X", x)], outputs=wanted)])
    np.testing.assert_array_equal(response.output("Y").data, -x)
    np.testing.assert_array_equal(response.output("Z").data, np.abs(x))
