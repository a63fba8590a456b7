"""PythonBackend picks one runner at load and delegates to it; the runners share one interface."""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path

import numpy as np
import pytest

from modelplatform import InferenceRequest, InferenceResponse, ModelConfig, Tensor, Unavailable, Unsupported
from modelplatform_python.backend import PythonBackend
from modelplatform_python.process_runner import ProcessRunner
from modelplatform_python.runner import Runner
from modelplatform_python.thread_runner import ThreadRunner
from modelplatform_python.triton_runner import TritonRunner

RUNNERS = [ThreadRunner, ProcessRunner, TritonRunner]
INTERFACE = ["load", "execute", "stream", "handle_raw", "unload"]

PLAIN = """
    class Model:
        def infer(self, inputs):
            return {"OUT": inputs["IN"] * 2}
"""
GENERATOR = """
    class Model:
        def infer(self, inputs):
            for step in (1, 2, 3):
                yield {"OUT": inputs["IN"] * step}
"""
TRITON = """
    import triton_python_backend_utils as pb_utils

    class TritonPythonModel:
        def execute(self, requests):
            return [
                pb_utils.InferenceResponse([pb_utils.Tensor("OUT", r.inputs()[0].as_numpy() + 1)])
                for r in requests
            ]
"""


def model(tmp_path: Path, source: str, kind: str = "thread") -> PythonBackend:
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "model.py").write_text(textwrap.dedent(source))
    config = ModelConfig.from_json({
        "name": "m",
        "backend": "python",
        "input": [{"name": "IN", "data_type": "TYPE_FP32", "dims": [-1]}],
        "output": [{"name": "OUT", "data_type": "TYPE_FP32", "dims": [-1]}],
        "parameters": {"python.instance_kind": {"string_value": kind}},
    })  # fmt: skip
    return PythonBackend(config, tmp_path / "m" / "1")


def request(*values: float) -> InferenceRequest:
    return InferenceRequest("m", [Tensor.from_array("IN", np.array(values, np.float32))])


def out(response: object) -> list[float]:
    assert isinstance(response, InferenceResponse), response
    return response.output("OUT").data.tolist()


@pytest.mark.parametrize("runner", RUNNERS, ids=lambda r: r.__name__)
def test_every_runner_has_the_one_interface(runner):
    for name in INTERFACE:
        expected, actual = getattr(Runner, name), getattr(runner, name)
        wanted = inspect.signature(expected).parameters.keys()
        assert inspect.signature(actual).parameters.keys() == wanted, name
        assert inspect.iscoroutinefunction(actual) == inspect.iscoroutinefunction(expected), name


@pytest.mark.parametrize(
    ("source", "kind", "runner"),
    [
        (PLAIN, "thread", ThreadRunner),
        (TRITON, "thread", TritonRunner),
        (PLAIN, "process", ProcessRunner),
    ],
    ids=["model", "triton", "process"],
)
async def test_load_picks_one_runner_and_the_backend_delegates_to(tmp_path, source, kind, runner):
    backend = model(tmp_path, source, kind)
    await backend.load()
    try:
        assert type(backend._runner) is runner
        (answer,) = await backend.execute([request(1.0, 2.0)])
        assert out(answer) == ([2.0, 3.0] if runner is TritonRunner else [2.0, 4.0])
    finally:
        await backend.unload()


async def test_before_load_and_after_unload_every_call_is_unavailable(tmp_path):
    backend = model(tmp_path, PLAIN)
    (refused,) = await backend.execute([request(1.0)])
    assert isinstance(refused, Unavailable) and refused.message == "model 'm' is not loaded"
    await backend.load()
    await backend.unload()
    with pytest.raises(Unavailable):
        await backend.handle_raw(b"", {})
    with pytest.raises(Unavailable):
        await anext(backend.stream(request(1.0)))
    await backend.unload()  # a second unload finds nothing left to release


async def test_a_generator_model_streams_and_a_unary_call_gets_its_last_yield(tmp_path):
    backend = model(tmp_path, GENERATOR)
    await backend.load()
    try:
        assert [out(r) async for r in backend.stream(request(1.0))] == [[1.0], [2.0], [3.0]]
        (last,) = await backend.execute([request(2.0)])
        assert out(last) == [6.0]
    finally:
        await backend.unload()


async def test_a_plain_model_streams_one_response(tmp_path):
    backend = model(tmp_path, PLAIN)
    await backend.load()
    try:
        assert [out(r) async for r in backend.stream(request(4.0))] == [[8.0]]
    finally:
        await backend.unload()


async def test_a_triton_model_neither_streams_nor_answers_raw_requests(tmp_path):
    backend = model(tmp_path, TRITON)
    await backend.load()
    try:
        with pytest.raises(Unsupported, match="Triton python model: it answers one response"):
            await anext(backend.stream(request(1.0)))
        with pytest.raises(Unsupported, match=r"has no http\(body, headers\) method"):
            await backend.handle_raw(b"", {})
    finally:
        await backend.unload()
