"""Core request path on a function-based test backend (no protocol plugin involved)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from modelplatform import InferenceRequest, InvalidInput, ModelExecutionError, ModelNotFound, Settings, Tensor
from modelplatform.models import ModelState
from modelplatform.testing import FunctionBackendPlugin, InProcessServer, free_port, function_model

CONFIG = """
name: "{name}"
backend: "function"
max_batch_size: 4
input [ {{ name: "A" data_type: TYPE_FP32 dims: [ 2 ] }} ]
output [ {{ name: "B" data_type: TYPE_FP32 dims: [ 2 ] }} ]
"""


def _model(root: Path, name: str, versions=(1,)) -> None:
    (root / name).mkdir()
    (root / name / "config.pbtxt").write_text(CONFIG.format(name=name))
    for version in versions:
        (root / name / str(version)).mkdir()


def _double(inputs):
    return {"B": inputs["A"] * 2}


def _explode(inputs):
    raise RuntimeError("boom")


@pytest.fixture
def repo(tmp_path):
    _model(tmp_path, "double", versions=(1, 2))
    _model(tmp_path, "explode")
    function_model("double", _double)
    function_model("explode", _explode)
    return tmp_path


def _settings(repo: Path) -> Settings:
    return Settings(
        model_repository=repo,
        host="127.0.0.1",
        http_port=free_port(),
        grpc_port=free_port(),
        plugins=("python",),
    )


def _request(model: str, array: np.ndarray, version: str = "") -> InferenceRequest:
    return InferenceRequest(model, [Tensor.from_array("A", array)], model_version=version, id="r1")


async def test_infer_runs_the_latest_version(repo):
    async with InProcessServer(_settings(repo), [FunctionBackendPlugin]) as server:
        dataplane = server.context.dataplane
        response = await dataplane.inference.infer(_request("double", np.ones((3, 2), np.float32)))
        assert response.model_version == "2" and response.id == "r1"
        np.testing.assert_array_equal(response.outputs[0].data, np.full((3, 2), 2.0))
        assert dataplane.health.ready()
        assert dataplane.repository.model_metadata("double").versions == ["2"]
        stats = server.running.models.get("double").stats.to_json()
        # Triton counts inferences as batch rows: one execution of a 3-row request
        assert stats["inference_count"] == 3 and stats["execution_count"] == 1


async def test_errors_fail_alone_and_the_model_keeps_serving(repo):
    async with InProcessServer(_settings(repo), [FunctionBackendPlugin]) as server:
        dataplane = server.context.dataplane
        with pytest.raises(ModelExecutionError, match="RuntimeError: boom"):
            await dataplane.inference.infer(_request("explode", np.ones((1, 2), np.float32)))
        with pytest.raises(InvalidInput, match="expected datatype FP32, got INT32"):
            await dataplane.inference.infer(_request("double", np.ones((1, 2), np.int32)))
        with pytest.raises(ModelNotFound):
            await dataplane.inference.infer(_request("nothing", np.ones((1, 2), np.float32)))
        with pytest.raises(ModelNotFound):
            await dataplane.inference.infer(_request("double", np.ones((1, 2), np.float32), version="7"))
        response = await dataplane.inference.infer(_request("double", np.ones((1, 2), np.float32)))
        assert response.outputs[0].data.tolist() == [[2.0, 2.0]]
        stats = server.running.models.get("double").stats.to_json()
        assert stats["inference_stats"]["fail"]["count"] == 1  # the INT32 request
        assert stats["inference_stats"]["success"]["count"] == 1


async def test_unload_and_index(repo):
    async with InProcessServer(_settings(repo), [FunctionBackendPlugin]) as server:
        models = server.running.models
        await models.unload("double")
        with pytest.raises(ModelNotFound, match="'double' has no available versions$"):
            models.get("double")  # unloaded answers as not there, not as busy
        states = {(e.name, e.version): (e.state, e.reason) for e in models.index()}
        assert states[("double", "2")] == ("UNAVAILABLE", "unloaded")
        assert server.context.dataplane.health.ready()  # an unloaded model is not expected to be READY
        await models.load("double")
        assert models.get("double").state is ModelState.READY


async def test_missing_function_is_a_load_failure_with_reason(repo):
    _model(repo, "orphan")
    async with InProcessServer(_settings(repo), [FunctionBackendPlugin]) as server:
        entry = next(e for e in server.running.models.index() if e.name == "orphan")
        assert entry.state == "UNAVAILABLE" and "no function registered" in entry.reason
        assert server.context.dataplane.health.model_ready("double")
