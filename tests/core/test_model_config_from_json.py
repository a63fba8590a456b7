"""ModelConfig.from_json: how a backend completes a configuration it loaded."""

from __future__ import annotations

import pytest

from modelplatform import InvalidArgument, ModelConfig


def test_round_trip_keeps_fields_and_adds_tensors():
    original = ModelConfig.from_json({"name": "m", "platform": "onnxruntime_onnx"})
    data = original.to_json()
    data["max_batch_size"] = 8
    data["input"] = [{"name": "X", "data_type": "TYPE_FP32", "dims": [16]}]
    completed = ModelConfig.from_json(data)
    assert completed.platform == "onnxruntime_onnx"
    assert completed.max_batch_size == 8
    assert completed.inputs[0].datatype == "FP32"
    assert completed.inputs[0].full_shape(8) == [-1, 16]


def test_invalid_json_is_refused():
    with pytest.raises(InvalidArgument):
        ModelConfig.from_json({"name": "m", "max_batch_size": -1})
