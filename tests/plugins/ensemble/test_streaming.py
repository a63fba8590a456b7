"""Ensembles with a streaming step model, in a real in-process server.

Each answer of a streaming step (a generator such as ``stream_counter``, or a
decoupled model such as ``word_stream``) runs the steps after it once and
is one response of the ensemble's stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil

import numpy as np
import pytest

from modelplatform import DecoupledModel, InferenceRequest, ModelPlatformError, Tensor
from modelplatform.base.settings import Settings
from modelplatform.testing import InProcessServer

from ...conftest import MODEL_REPOSITORY
from .models import ADD_PY, ensemble_model, python_model, step

#: INT32 X -> Y = X * 10; fails on X == 2 when its parameter says so.
TENFOLD_PY = """
class Model:
    def load(self, config):
        self.fail_on_two = config.parameters.get("fail_on_two") == "yes"

    def infer(self, inputs):
        if self.fail_on_two and int(inputs["X"].reshape(-1)[0]) == 2:
            raise RuntimeError("two is refused")
        return {"Y": inputs["X"] * 10}
"""
UPPER_PY = """
import numpy as np


class Model:
    def infer(self, inputs):
        return {"LOUD": np.array([w.upper() for w in inputs["WORD"].reshape(-1)], dtype=np.object_)}
"""
INT32_ONE = "data_type: TYPE_INT32 dims: [ 1 ]"


def _int32(name: str) -> dict:
    return {"name": name, "data_type": "TYPE_INT32", "dims": [1]}


def _ensemble(root, name, inputs, outputs, steps) -> None:
    ensemble_model(
        root,
        name,
        {
            "platform": "ensemble",
            "max_batch_size": 0,
            "input": inputs,
            "output": outputs,
            "ensemble_scheduling": {"step": steps},
        },
    )


@pytest.fixture
def repository(tmp_path):
    for name in ("stream_counter", "word_stream"):
        shutil.copytree(MODEL_REPOSITORY / name, tmp_path / name)
    tenfold = (
        f'max_batch_size: 0\ninput [ {{ name: "X" {INT32_ONE} }} ]\noutput [ {{ name: "Y" {INT32_ONE} }} ]\n'
    )
    python_model(tmp_path, "tenfold", TENFOLD_PY, tenfold)
    python_model(
        tmp_path,
        "tenfold_picky",
        TENFOLD_PY,
        tenfold + 'parameters { key: "fail_on_two" value { string_value: "yes" } }\n',
    )
    python_model(
        tmp_path,
        "add",
        ADD_PY,
        (
            f'max_batch_size: 0\ninput [ {{ name: "A" {INT32_ONE} }}, {{ name: "B" {INT32_ONE} }} ]\n'
            f'output [ {{ name: "OUTPUT0" {INT32_ONE} }} ]\n'
        ),
    )
    python_model(
        tmp_path,
        "upper",
        UPPER_PY,
        (
            'max_batch_size: 0\ninput [ { name: "WORD" data_type: TYPE_STRING dims: [ 1 ] } ]\n'
            'output [ { name: "LOUD" data_type: TYPE_STRING dims: [ 1 ] } ]\n'
        ),
    )
    counted = step("stream_counter", {"COUNT": "COUNT"}, {"INDEX": "INDEX"})
    _ensemble(
        tmp_path,
        "counted",
        [_int32("COUNT")],
        [_int32("OUT")],
        [counted, step("tenfold", {"X": "INDEX"}, {"Y": "OUT"})],
    )
    _ensemble(
        tmp_path,
        "counted_picky",
        [_int32("COUNT")],
        [_int32("OUT")],
        [counted, step("tenfold_picky", {"X": "INDEX"}, {"Y": "OUT"})],
    )
    # A side branch that does not stream: computed once, read by every answer's step.
    _ensemble(
        tmp_path,
        "counted_plus",
        [_int32("COUNT")],
        [_int32("OUT"), _int32("TEN")],
        [
            step("add", {"A": "INDEX", "B": "TEN"}, {"OUTPUT0": "OUT"}),
            counted,
            step("tenfold", {"X": "COUNT"}, {"Y": "TEN"}),
        ],
    )
    # A streaming step after a streaming step: the second counts to each count of the first.
    _ensemble(
        tmp_path,
        "counted_twice",
        [_int32("COUNT")],
        [_int32("OUT")],
        [counted, step("stream_counter", {"COUNT": "INDEX"}, {"INDEX": "OUT"})],
    )
    words = {"name": "TEXT", "data_type": "TYPE_STRING", "dims": [1]}
    _ensemble(
        tmp_path,
        "loud_words",
        [words],
        [{**words, "name": "LOUD"}],
        [
            step("word_stream", {"text_input": "TEXT"}, {"text_output": "WORD"}),
            step("upper", {"WORD": "WORD"}, {"LOUD": "LOUD"}),
        ],
    )
    return tmp_path


def _settings(root) -> Settings:
    return Settings(
        model_repository=root,
        http_port=0,
        grpc_port=0,
        plugin_options={"metrics": {"metrics_port": 0, "allow_metrics": False}},
    )


def _count(model: str, count: int) -> InferenceRequest:
    return InferenceRequest(model, [Tensor.from_array("COUNT", np.array([count], dtype=np.int32))])


async def _streamed(server: InProcessServer, request: InferenceRequest) -> list[dict]:
    responses = server.context.dataplane.inference.stream(request)
    return [{t.name: t.data.tolist() for t in response.outputs} async for response in responses]


def test_each_answer_of_a_streaming_step_runs_the_next_step_and_is_one_response(repository):
    async def run() -> list[dict]:
        async with InProcessServer(_settings(repository)) as server:
            return await _streamed(server, _count("counted", 3))

    assert asyncio.run(run()) == [{"OUT": [10]}, {"OUT": [20]}, {"OUT": [30]}]


def test_a_streaming_step_after_a_streaming_step_answers_for_each_answer_in_turn(repository):
    async def run() -> list[dict]:
        async with InProcessServer(_settings(repository)) as server:
            return await _streamed(server, _count("counted_twice", 3))

    assert [seen["OUT"][0] for seen in asyncio.run(run())] == [1, 1, 2, 1, 2, 3]


def test_a_step_that_streams_no_answer_gives_no_response(repository):
    async def run() -> list[dict]:
        async with InProcessServer(_settings(repository)) as server:
            return await _streamed(server, _count("counted", 0))

    assert asyncio.run(run()) == []


def test_a_side_branch_runs_once_and_every_answer_reads_it(repository):
    async def run() -> tuple[list[dict], int]:
        async with InProcessServer(_settings(repository)) as server:
            seen = await _streamed(server, _count("counted_plus", 3))
            stats = await server.context.dataplane.observation.statistics("tenfold")
            return seen, stats[0].durations["success"].count

    seen, tenfold_calls = asyncio.run(run())
    assert seen == [{"OUT": [31], "TEN": [30]}, {"OUT": [32], "TEN": [30]}, {"OUT": [33], "TEN": [30]}]
    assert tenfold_calls == 1


def test_a_unary_call_gets_the_generator_steps_unary_answer(repository):
    """stream_counter answers a unary call with its last count; the ensemble follows it."""

    async def run() -> tuple[list, bool]:
        async with InProcessServer(_settings(repository)) as server:
            response = await server.context.dataplane.inference.infer(_count("counted", 3))
            return response.outputs[0].data.tolist(), server.context.dataplane.repository.model_config(
                "counted"
            ).decoupled

    assert asyncio.run(run()) == ([30], False)


def test_a_decoupled_step_makes_the_ensemble_decoupled(repository):
    text = Tensor.from_array("TEXT", np.array([b"one two three"], dtype=np.object_))

    async def run() -> tuple[bool, str, list[dict]]:
        async with InProcessServer(_settings(repository)) as server:
            dataplane = server.context.dataplane
            with pytest.raises(DecoupledModel) as refused:
                await dataplane.inference.infer(InferenceRequest("loud_words", [text]))
            seen = await _streamed(server, InferenceRequest("loud_words", [text]))
            return dataplane.repository.model_config("loud_words").decoupled, str(refused.value), seen

    decoupled, refused, seen = asyncio.run(run())
    assert decoupled is True
    assert "decoupled" in refused
    assert seen == [{"LOUD": [b"ONE"]}, {"LOUD": [b"TWO"]}, {"LOUD": [b"THREE"]}]


def test_a_step_failing_on_one_answer_ends_the_stream_with_its_error(repository):
    async def run() -> tuple[list[dict], str]:
        seen: list[dict] = []
        async with InProcessServer(_settings(repository)) as server:
            with pytest.raises(ModelPlatformError) as failed:
                async for response in server.context.dataplane.inference.stream(_count("counted_picky", 3)):
                    seen.append({t.name: t.data.tolist() for t in response.outputs})
            return seen, str(failed.value)

    seen, error = asyncio.run(run())
    assert seen == [{"OUT": [10]}]
    assert "tenfold_picky" in error and "two is refused" in error


def test_closing_the_stream_early_closes_the_steps_stream(repository):
    """The client reads one response of a thousand and leaves: the counter stops."""

    async def run() -> tuple[list[dict], int]:
        async with InProcessServer(_settings(repository)) as server:
            dataplane = server.context.dataplane
            responses = dataplane.inference.stream(_count("counted", 1000))
            async with contextlib.aclosing(responses):
                first = await anext(responses)
            await asyncio.sleep(0.3)  # a counter still running would send 30 more by now
            stats = await dataplane.observation.statistics("tenfold")
            return [{t.name: t.data.tolist() for t in first.outputs}], stats[0].durations["success"].count

    seen, tenfold_calls = asyncio.run(run())
    assert seen == [{"OUT": [10]}]
    assert tenfold_calls <= 2
