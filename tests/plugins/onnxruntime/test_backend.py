"""The onnxruntime backend driven directly: load, auto-complete, batches, errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from modelplatform import (
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    ModelConfig,
    RequestedOutput,
    Tensor,
)
from modelplatform_onnxruntime.backend import OnnxRuntimeBackend

ROOT = Path(__file__).resolve().parents[3]
SIMPLE = ROOT / "model_repository" / "simple_onnx"


def _request(a: np.ndarray, b: np.ndarray, outputs: list[str] | None = None) -> InferenceRequest:
    inputs = [Tensor.from_array("INPUT0", a), Tensor.from_array("INPUT1", b)]
    wanted = None if outputs is None else [RequestedOutput(n) for n in outputs]
    return InferenceRequest("simple_onnx", inputs, outputs=wanted)


def _rows(batch: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.random((batch, 16), dtype=np.float32), rng.random((batch, 16), dtype=np.float32)


async def _loaded(config: ModelConfig, version_dir: Path) -> OnnxRuntimeBackend:
    backend = OnnxRuntimeBackend(config, version_dir)
    await backend.load()
    return backend


@pytest.fixture
async def simple() -> OnnxRuntimeBackend:
    config = ModelConfig.from_json({"name": "simple_onnx", "max_batch_size": 8})
    backend = await _loaded(config, SIMPLE / "1")
    yield backend
    await backend.unload()


async def test_config_omitting_tensors_is_completed_from_the_graph(simple):
    assert simple.config.max_batch_size == 8
    assert [(s.name, s.datatype, s.dims) for s in simple.config.inputs] == [
        ("INPUT0", "FP32", (16,)),
        ("INPUT1", "FP32", (16,)),
    ]
    assert [s.name for s in simple.config.outputs] == ["OUTPUT0", "OUTPUT1"]


async def test_empty_config_gets_default_max_batch_size():
    backend = await _loaded(ModelConfig("simple_onnx"), SIMPLE / "1")
    assert backend.config.max_batch_size == 4
    await backend.unload()


async def test_batch_of_requests_is_answered_in_order(simple):
    pairs = [_rows(n, seed) for seed, n in enumerate((1, 3, 2))]
    results = await simple.execute([_request(a, b) for a, b in pairs])
    assert len(results) == 3
    for (a, b), result in zip(pairs, results):
        assert isinstance(result, InferenceResponse)
        np.testing.assert_allclose(result.output("OUTPUT0").data, a + b, rtol=1e-6)
        np.testing.assert_allclose(result.output("OUTPUT1").data, a - b, rtol=1e-6)
        assert result.output("OUTPUT0").datatype == "FP32"


async def test_one_bad_request_fails_alone(simple):
    good_a, good_b = _rows(2)
    bad = _request(np.ones((1, 16), np.float32), np.ones((1, 8), np.float32))
    results = await simple.execute([_request(good_a, good_b), bad, _request(good_b, good_a)])
    assert isinstance(results[0], InferenceResponse)
    assert isinstance(results[1], InvalidArgument), results[1]
    assert "simple_onnx" in results[1].message
    assert isinstance(results[2], InferenceResponse)
    np.testing.assert_allclose(results[2].output("OUTPUT1").data, good_b - good_a, rtol=1e-6)


async def test_requested_outputs_only(simple):
    a, b = _rows(1)
    (result,) = await simple.execute([_request(a, b, outputs=["OUTPUT1"])])
    assert [t.name for t in result.outputs] == ["OUTPUT1"]


async def test_mismatched_config_fails_load_with_reason():
    config = ModelConfig.from_json(
        {
            "name": "simple_onnx",
            "max_batch_size": 8,
            "input": [{"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [16]}],
        }
    )
    with pytest.raises(InvalidArgument, match="input 'INPUT0' is INT32 in the configuration, FP32"):
        await _loaded(config, SIMPLE / "1")


async def test_missing_file_and_broken_file_fail_load(tmp_path):
    with pytest.raises(InvalidArgument, match="model.onnx does not exist"):
        await _loaded(ModelConfig("x"), tmp_path)
    (tmp_path / "model.onnx").write_bytes(b"not an onnx graph")
    with pytest.raises(InvalidArgument, match="ONNX Runtime could not load .*model.onnx"):
        await _loaded(ModelConfig("x"), tmp_path)


async def test_default_model_filename_is_honoured(tmp_path):
    shutil.copy(SIMPLE / "1" / "model.onnx", tmp_path / "graph.onnx")
    config = ModelConfig.from_json({"name": "x", "default_model_filename": "graph.onnx"})
    backend = await _loaded(config, tmp_path)
    assert len(backend.config.inputs) == 2
    await backend.unload()
