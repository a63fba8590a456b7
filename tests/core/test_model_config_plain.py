"""ModelConfig is plain data: no protobuf leaves the config reader."""

from __future__ import annotations

import ast
import dataclasses
import pickle
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from modelplatform import InvalidArgument, ModelConfig
from modelplatform.base.config_reader import load_file, parse_json
from modelplatform.base.model_config import InstanceGroup, read_config
from modelplatform.models import LoadOverride
from modelplatform.protos import model_config_pb2 as pb

from ..conftest import MODEL_REPOSITORY
from .test_model_config import TRITON_CONFIG

CORE = Path(__file__).resolve().parents[2] / "core" / "modelplatform"
MODEL_DIRS = sorted(p for p in MODEL_REPOSITORY.iterdir() if (p / "config.pbtxt").is_file())


def _walk(value: Any, path: str = "config") -> list[tuple[str, Any]]:
    """Every value inside ``value`` (dataclass fields, mappings, sequences), with where it sits."""
    found = [(path, value)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            found += _walk(getattr(value, item.name), f"{path}.{item.name}")
    elif isinstance(value, dict):
        for key, item in value.items():
            found += _walk(key, f"{path}[key]") + _walk(item, f"{path}[{key!r}]")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found += _walk(item, f"{path}[{index}]")
    return found


def _protobuf_inside(config: ModelConfig) -> list[str]:
    return [
        path
        for path, value in _walk(config)
        if isinstance(value, Message) or type(value).__module__.startswith("google.protobuf")
    ]


def _triton_dir(tmp_path: Path) -> Path:
    model_dir = tmp_path / "m"
    model_dir.mkdir()
    config = TRITON_CONFIG + 'default_model_filename: "graph.onnx"\n'
    (model_dir / "config.pbtxt").write_text(config)
    return model_dir


@pytest.mark.parametrize("model_dir", MODEL_DIRS, ids=lambda p: p.name)
def test_configs_read_from_the_repository_hold_no_protobuf(model_dir):
    config = read_config(model_dir)
    assert config.document, "the walk must reach the JSON document"
    assert _protobuf_inside(config) == []
    assert pickle.loads(pickle.dumps(config)) == config


def test_a_full_triton_config_holds_no_protobuf_and_exposes_plain_fields(tmp_path):
    config = read_config(_triton_dir(tmp_path))
    assert _protobuf_inside(config) == []
    assert config.default_model_filename == "graph.onnx"
    assert config.instance_group == (
        InstanceGroup(kind="KIND_CPU", count=2),
        InstanceGroup(kind="KIND_AUTO", count=1),
    )
    assert config.instance_count == 3


def test_completed_and_overridden_configs_hold_no_protobuf(tmp_path):
    model_dir = _triton_dir(tmp_path)
    completed = ModelConfig.from_json({**read_config(model_dir).to_json(), "max_batch_size": 8})
    overridden = read_config(model_dir, {"max_batch_size": 2}, name="renamed")
    for config in (completed, overridden, completed.with_backend("python")):
        assert _protobuf_inside(config) == []
    assert (overridden.name, overridden.platform) == ("renamed", "onnxruntime_onnx")
    assert overridden.max_batch_size == 2


def test_gpus_of_an_instance_group_are_plain_ints():
    config = ModelConfig.from_json(
        {"name": "m", "instance_group": [{"kind": "KIND_GPU", "count": 2, "gpus": [0, 1]}, {}]}
    )
    assert config.instance_group == (InstanceGroup("KIND_GPU", 2, (0, 1)), InstanceGroup())


@pytest.mark.parametrize("model_dir", MODEL_DIRS, ids=lambda p: p.name)
def test_the_document_turns_back_into_the_message_that_was_read(model_dir):
    """What oip-grpc's ModelConfig RPC answers is the message config.pbtxt holds, byte for byte."""
    rebuilt = json_format.ParseDict(read_config(model_dir).document, pb.ModelConfig())
    expected = load_file(model_dir)
    assert rebuilt.SerializeToString(deterministic=True) == expected.SerializeToString(deterministic=True)


def test_a_completed_config_turns_back_into_the_message_it_was_made_from(tmp_path):
    data = {**read_config(_triton_dir(tmp_path)).to_json(), "max_batch_size": 8}
    rebuilt = json_format.ParseDict(ModelConfig.from_json(data).document, pb.ModelConfig())
    assert rebuilt == parse_json(data)


def test_a_load_override_is_plain_json_checked_at_once():
    text = '{"max_batch_size": 4, "input": [{"name": "A", "dims": ["3"]}]}'
    override = LoadOverride.from_json(text)
    assert override.config == {"max_batch_size": 4, "input": [{"name": "A", "dims": [3]}]}
    assert _protobuf_inside(override) == []  # type: ignore[arg-type]  # any object: the walk takes what it is given
    assert LoadOverride.from_json({"max_batch_size": 0}).key == LoadOverride.from_json({}).key
    with pytest.raises(InvalidArgument, match="invalid model configuration JSON"):
        LoadOverride.from_json("{not json")
    with pytest.raises(InvalidArgument, match="invalid model configuration JSON"):
        LoadOverride.from_json({"max_batch_size": "many"})


@pytest.mark.parametrize("package", ["models", "cluster"])
def test_models_and_cluster_import_no_protobuf(package):
    for module in sorted((CORE / package).glob("*.py")):
        tree = ast.parse(module.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            assert not any("protobuf" in n or "protos" in n or n.endswith("_pb2") for n in names), (
                f"{module.name} imports {names}"
            )
