"""The dataplane's version resolution, version status, index, repository config, load and unload.

What plugins used to get from the model manager, now through the dataplane
as frozen views, on the function-based test backend.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from modelplatform import (
    IndexEntry,
    InferenceRequest,
    InvalidArgument,
    ModelConfig,
    ModelNotFound,
    Settings,
    Tensor,
    VersionInfo,
)
from modelplatform.testing import FunctionBackendPlugin, InProcessServer, free_port, function_model

CONFIG = """
name: "{name}"
backend: "function"
max_batch_size: 0
input [ {{ name: "A" data_type: TYPE_FP32 dims: [ 2 ] }} ]
output [ {{ name: "B" data_type: TYPE_FP32 dims: [ 2 ] }} ]
version_policy: {{ all: {{ }} }}
parameters {{ key: "greeting" value {{ string_value: " hello " }} }}
"""


def _model(root: Path, name: str, versions: tuple[int, ...] = (1,)) -> Path:
    (root / name).mkdir(parents=True)
    (root / name / "config.pbtxt").write_text(CONFIG.format(name=name))
    for version in versions:
        (root / name / str(version)).mkdir()
    return root / name


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "models"
    _model(root, "double", versions=(1, 2))
    _model(root, "idle")
    function_model("double", lambda inputs: {"B": inputs["A"] * 2})
    function_model("idle", lambda inputs: {"B": inputs["A"]})
    function_model("uploaded", lambda inputs: {"B": inputs["A"] * 3})
    return root


def _settings(repo: Path) -> Settings:
    return Settings(
        model_repository=repo,
        host="127.0.0.1",
        http_port=free_port(),
        grpc_port=free_port(),
        plugins=("python",),
        load_models=("double",),
    )


def _server(repo: Path) -> InProcessServer:
    return InProcessServer(_settings(repo), [FunctionBackendPlugin])


def _request(model: str) -> InferenceRequest:
    return InferenceRequest(model, [Tensor.from_array("A", np.ones(2, np.float32))])


async def test_resolve_answers_a_frozen_view_of_the_ready_version(repo: Path) -> None:
    async with _server(repo) as server:
        dataplane = server.context.dataplane
        latest = dataplane.inference.resolve("double")
        assert type(latest) is VersionInfo and isinstance(latest.config, ModelConfig)
        assert (latest.name, latest.version, latest.state, latest.ready) == ("double", "2", "READY", True)
        assert dataplane.inference.resolve("double", "1").version == "1"
        with pytest.raises(dataclasses.FrozenInstanceError):
            latest.version = "1"  # type: ignore[misc]  # writing a frozen field is what the test checks


async def test_resolve_raises_what_infer_raises(repo: Path) -> None:
    async with _server(repo) as server:
        dataplane = server.context.dataplane
        for name, version, error in [
            ("nothing", "", ModelNotFound),
            ("double", "7", ModelNotFound),
            ("idle", "", ModelNotFound),
            ("double", "x", InvalidArgument),
        ]:
            with pytest.raises(error):
                dataplane.inference.resolve(name, version)
            with pytest.raises(error):
                await dataplane.inference.infer(InferenceRequest(name, [], model_version=version))
        await dataplane.repository.unload("double")
        with pytest.raises(ModelNotFound, match="'double' version 2 is not found$"):
            dataplane.inference.resolve("double", "2")


async def test_version_status_lists_every_known_version_with_state_and_reason(repo: Path) -> None:
    async with _server(repo) as server:
        dataplane = server.context.dataplane
        assert [(v.version, v.state, v.reason) for v in dataplane.repository.version_status("double")] == [
            ("1", "READY", ""),
            ("2", "READY", ""),
        ]
        assert (
            dataplane.repository.version_status("idle") == []
            and dataplane.repository.version_status("nothing") == []
        )
        await dataplane.repository.unload("double")
        assert [(v.version, v.state, v.reason) for v in dataplane.repository.version_status("double")] == [
            ("1", "UNAVAILABLE", "unloaded"),
            ("2", "UNAVAILABLE", "unloaded"),
        ]


async def test_index_lists_the_repository_and_loaded_versions(repo: Path) -> None:
    async with _server(repo) as server:
        dataplane = server.context.dataplane
        assert dataplane.repository.index() == [
            IndexEntry("double", "1", "READY"),
            IndexEntry("double", "2", "READY"),
            IndexEntry("idle"),
        ]
        assert [e.name for e in dataplane.repository.index(ready_only=True)] == ["double", "double"]


async def test_repository_config_reads_a_model_that_is_not_loaded(repo: Path) -> None:
    async with _server(repo) as server:
        dataplane = server.context.dataplane
        config = dataplane.repository.repository_config("idle")
        assert isinstance(config, ModelConfig)
        assert config.name == "idle" and config.parameters["greeting"] == " hello "
        assert not dataplane.health.model_ready("idle")
        for missing in ("nothing", "../models/idle", ".", ""):
            assert dataplane.repository.repository_config(missing) is None
        (repo / "idle" / "config.pbtxt").write_text("not a config {")
        with pytest.raises(InvalidArgument):
            dataplane.repository.repository_config("idle")


async def test_load_and_unload_by_name(repo: Path) -> None:
    async with _server(repo) as server:
        dataplane = server.context.dataplane
        await dataplane.repository.load("idle")
        assert dataplane.inference.resolve("idle").version == "1"
        await dataplane.repository.unload("idle")
        assert not dataplane.health.model_ready("idle")
        with pytest.raises(ModelNotFound):
            await dataplane.repository.load("nothing")


TENSORS = {
    "max_batch_size": 0,
    "input": [{"name": "A", "data_type": "TYPE_FP32", "dims": [2]}],
    "output": [{"name": "B", "data_type": "TYPE_FP32", "dims": [2]}],
}


@pytest.mark.parametrize("as_text", [False, True])
async def test_load_takes_a_json_config_override(repo: Path, as_text: bool) -> None:
    override = {**TENSORS, "version_policy": {"specific": {"versions": [1]}}}
    async with _server(repo) as server:
        dataplane = server.context.dataplane
        await dataplane.repository.load("double", json.dumps(override) if as_text else override)
        assert [v.version for v in dataplane.repository.version_status("double") if v.ready] == ["1"]
        assert dataplane.inference.resolve("double").config.backend == "function"  # kept from the folder
        with pytest.raises(InvalidArgument, match="invalid model configuration JSON"):
            await dataplane.repository.load("double", "{not json")
        assert dataplane.health.model_ready("double", "1")


async def test_load_from_a_temporary_folder_which_is_removed_after_unload(repo: Path, tmp_path: Path) -> None:
    folder = _model(tmp_path / "upload", "uploaded", versions=(3,))
    async with _server(repo) as server:
        dataplane = server.context.dataplane
        await dataplane.repository.load(
            "uploaded", {**TENSORS, "backend": "function"}, model_dir=folder, temporary=True
        )
        response = await dataplane.inference.infer(_request("uploaded"))
        assert response.model_version == "3" and list(response.outputs[0].data) == [3.0, 3.0]
        assert folder.is_dir()
        await dataplane.repository.unload("uploaded")
        assert not folder.exists()


async def test_a_bad_config_for_a_temporary_folder_removes_the_folder(repo: Path, tmp_path: Path) -> None:
    folder = _model(tmp_path / "upload", "uploaded")
    async with _server(repo) as server:
        with pytest.raises(InvalidArgument):
            await server.context.dataplane.repository.load(
                "uploaded", "{not json", model_dir=folder, temporary=True
            )
        assert not folder.exists()
