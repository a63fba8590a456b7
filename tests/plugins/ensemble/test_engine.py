"""The ensemble engine in a real in-process server: a diamond of steps, max_inflight_requests,
the wiring checks on their own, and what a failing step does to its request."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from modelplatform import (
    EnsembleScheduling,
    EnsembleStep,
    InferenceRequest,
    InvalidArgument,
    ModelConfig,
    Tensor,
    TensorSpec,
)
from modelplatform.base.settings import Settings
from modelplatform.testing import InProcessServer
from modelplatform_ensemble.graph import MAX_STEPS, wiring

from .models import ADD_PY, ensemble_json, ensemble_model, python_model, scale_model, step

#: Sleeps on the loop and answers how many of its calls were running at once, at most.
GAUGE_PY = """
import asyncio
import sys

import numpy as np


class Model:
    def load(self, config):
        # every instance imports model.py on its own: the count lives where they all see it
        self.running = sys.__dict__.setdefault("test_gauge_" + config.name, [0, 0])

    async def infer(self, inputs):
        running = self.running
        running[0] += 1
        running[1] = max(running[1], running[0])
        await asyncio.sleep(0.05)
        running[0] -= 1
        return {"OUTPUT0": np.array([running[1]], dtype=np.float32)}
"""
FP32_IN_OUT = (
    "max_batch_size: 0\n"
    'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
    'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
    "instance_group [ { count: 8 } ]\n"
)


@pytest.fixture
def repository(tmp_path):
    scale_model(tmp_path, "double", 2.0)
    scale_model(tmp_path, "triple", 3.0)
    python_model(
        tmp_path,
        "add",
        ADD_PY,
        (
            "max_batch_size: 0\n"
            'input [ { name: "A" data_type: TYPE_FP32 dims: [ -1 ] }, { name: "B" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
            'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
        ),
    )
    python_model(tmp_path, "gauge", GAUGE_PY, FP32_IN_OUT)
    python_model(tmp_path, "gauge_free", GAUGE_PY, FP32_IN_OUT)
    ensemble_model(
        tmp_path,
        "diamond",
        ensemble_json(
            ["IN"],
            ["OUT", "TWICE"],
            [
                step("add", {"A": "TWICE", "B": "THRICE"}, {"OUTPUT0": "OUT"}),  # listed first, runs last
                step("double", {"INPUT0": "IN"}, {"OUTPUT0": "TWICE"}),
                step("triple", {"INPUT0": "IN"}, {"OUTPUT0": "THRICE"}),
            ],
        ),
    )
    ensemble_model(
        tmp_path,
        "limited",
        ensemble_json(
            ["IN"], ["OUT"], [step("gauge", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"})], max_inflight_requests=2
        ),
    )
    ensemble_model(
        tmp_path,
        "unlimited",
        ensemble_json(["IN"], ["OUT"], [step("gauge_free", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"})]),
    )
    ensemble_model(
        tmp_path,
        "failing",
        ensemble_json(
            ["IN"],
            ["OUT"],
            [
                step("double", {"INPUT0": "IN"}, {"OUTPUT0": "MID"}),
                step("add", {"A": "MID", "B": "IN"}, {"OUTPUT0": "OUT"}),
            ],
        ),
    )
    return tmp_path


def _settings(root) -> Settings:
    return Settings(
        model_repository=root,
        http_port=0,
        grpc_port=0,
        plugin_options={"metrics": {"metrics_port": 0, "allow_metrics": False}},
    )


def _request(model: str, values: list[float]) -> InferenceRequest:
    return InferenceRequest(model, [Tensor.from_array("IN", np.array(values, dtype=np.float32))])


def test_a_diamond_runs_each_step_once_its_inputs_are_ready(repository):
    async def run() -> dict:
        async with InProcessServer(_settings(repository)) as server:
            response = await server.context.dataplane.inference.infer(_request("diamond", [1.0, 2.0]))
            return {t.name: t.data.tolist() for t in response.outputs}

    assert asyncio.run(run()) == {"OUT": [5.0, 10.0], "TWICE": [2.0, 4.0]}


def test_max_inflight_requests_bounds_each_step(repository):
    async def run(model: str) -> float:
        async with InProcessServer(_settings(repository)) as server:
            calls = [server.context.dataplane.inference.infer(_request(model, [0.0])) for _ in range(8)]
            answers = await asyncio.gather(*calls)
            return max(float(a.outputs[0].data[0]) for a in answers)

    assert asyncio.run(run("limited")) == 2
    assert asyncio.run(run("unlimited")) > 2  # eight instances: the ensemble itself never queues


def test_a_failing_step_fails_the_request_with_the_step_models_error(repository):
    async def run() -> str:
        async with InProcessServer(_settings(repository)) as server:
            dataplane = server.context.dataplane
            await dataplane.repository.unload("add")
            with pytest.raises(Exception) as raised:
                await dataplane.inference.infer(_request("failing", [1.0]))
            return str(raised.value)

    assert "'add'" in asyncio.run(run())


def _ensemble(steps: list[EnsembleStep], inputs=("IN",), outputs=("OUT",)) -> ModelConfig:
    spec = lambda name: TensorSpec(name, "FP32", (-1,))  # noqa: E731 - a one-line helper, local to this test
    return ModelConfig(
        "e",
        platform="ensemble",
        inputs=tuple(spec(n) for n in inputs),
        outputs=tuple(spec(n) for n in outputs),
        ensemble_scheduling=EnsembleScheduling(tuple(steps)),
    )


def test_the_wiring_names_a_cycle_step_by_step():
    steps = [
        EnsembleStep("a", -1, {"X": "IN", "Y": "C"}, {"Z": "OUT"}),
        EnsembleStep("b", -1, {"X": "OUT"}, {"Z": "B"}),
        EnsembleStep("c", -1, {"X": "B"}, {"Z": "C"}),
    ]
    with pytest.raises(InvalidArgument) as raised:
        wiring(_ensemble(steps))
    assert "cycle" in str(raised.value)
    assert "step 0 ('a')" in str(raised.value) and "step 2 ('c')" in str(raised.value)


def test_the_wiring_bounds_the_number_of_steps_and_needs_one():
    chain = [
        EnsembleStep("m", -1, {"X": "IN" if i == 0 else f"T{i}"}, {"Z": f"T{i + 1}"})
        for i in range(MAX_STEPS + 1)
    ]
    with pytest.raises(InvalidArgument, match="over the limit"):
        wiring(_ensemble(chain, outputs=(f"T{MAX_STEPS + 1}",)))
    with pytest.raises(InvalidArgument, match="no step"):
        wiring(_ensemble([]))


def test_the_wiring_of_a_valid_graph_lists_each_steps_needs():
    steps = [
        EnsembleStep("a", -1, {"X": "IN"}, {"Z": "MID"}),
        EnsembleStep("b", -1, {"X": "MID", "Y": "IN"}, {"Z": "OUT"}),
    ]
    found = wiring(_ensemble(steps))
    assert found.needs == (frozenset(), frozenset({"MID"}))
    assert found.readers == {"IN": (0, 1), "MID": (1,)}
