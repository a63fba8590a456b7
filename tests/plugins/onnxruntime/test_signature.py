"""Config auto-complete and checks against an ONNX graph's signature (no session needed)."""

from __future__ import annotations

import pytest

from modelplatform import InvalidArgument, ModelConfig
from modelplatform_onnxruntime import options
from modelplatform_onnxruntime.signature import DEFAULT_MAX_BATCH_SIZE, GraphTensor, complete

INPUTS = (GraphTensor("X", "FP32", (-1, 16)),)
OUTPUTS = (GraphTensor("Y", "FP32", (-1, 16)),)


def _config(**fields) -> ModelConfig:
    return ModelConfig.from_json({"name": "m", "platform": "onnxruntime_onnx", **fields})


def test_empty_config_is_filled_with_default_batch():
    config = complete(_config(), INPUTS, OUTPUTS)
    assert config.max_batch_size == DEFAULT_MAX_BATCH_SIZE
    assert [(s.name, s.datatype, s.dims) for s in config.inputs] == [("X", "FP32", (16,))]
    assert [(s.name, s.dims) for s in config.outputs] == [("Y", (16,))]
    assert config.platform == "onnxruntime_onnx"


def test_given_max_batch_size_is_kept_and_tensors_filled():
    config = complete(_config(max_batch_size=8), INPUTS, OUTPUTS)
    assert config.max_batch_size == 8
    assert config.inputs[0].full_shape(8) == [-1, 16]


def test_fixed_first_dimension_means_no_batching():
    config = complete(_config(), (GraphTensor("X", "INT64", (3, 4)),), OUTPUTS)
    assert config.max_batch_size == 0
    assert config.inputs[0].dims == (3, 4)


def test_declared_datatype_must_match_graph():
    config = _config(
        max_batch_size=8,
        input=[{"name": "X", "data_type": "TYPE_INT32", "dims": [16]}],
        output=[{"name": "Y", "data_type": "TYPE_FP32", "dims": [16]}],
    )
    with pytest.raises(InvalidArgument, match="input 'X' is INT32 in the configuration, FP32 in the graph"):
        complete(config, INPUTS, OUTPUTS)


def test_declared_dims_must_match_graph():
    config = _config(max_batch_size=8, input=[{"name": "X", "data_type": "TYPE_FP32", "dims": [8]}])
    with pytest.raises(InvalidArgument, match=r"shape \[-1, 8\] in the configuration, \[-1, 16\]"):
        complete(config, INPUTS, OUTPUTS)


def test_unknown_output_and_undeclared_input_are_refused():
    config = _config(max_batch_size=8, output=[{"name": "Z", "data_type": "TYPE_FP32", "dims": [16]}])
    with pytest.raises(InvalidArgument, match="output 'Z' is not in the ONNX graph"):
        complete(config, INPUTS, OUTPUTS)
    config = _config(max_batch_size=8, input=[{"name": "X", "data_type": "TYPE_FP32", "dims": [16]}])
    two_inputs = (*INPUTS, GraphTensor("W", "FP32", (-1, 16)))
    with pytest.raises(InvalidArgument, match=r"graph input\(s\) \['W'\] are not declared"):
        complete(config, two_inputs, OUTPUTS)


def test_batching_needs_a_dynamic_first_dimension():
    config = _config(max_batch_size=8)
    with pytest.raises(InvalidArgument, match="not dynamic"):
        complete(config, (GraphTensor("X", "FP32", (2, 16)),), OUTPUTS)


def test_session_parameters_are_parsed_and_checked():
    parsed = options.parse("m", {"intra_op_thread_count": "2", "graph_optimization_level": "Basic"})
    assert (parsed.intra_op_threads, parsed.inter_op_threads, parsed.graph_level) == (2, 0, "basic")
    with pytest.raises(InvalidArgument, match="'intra_op_thread_count' must be a whole number"):
        options.parse("m", {"intra_op_thread_count": "-1"})
    with pytest.raises(InvalidArgument, match="'graph_optimization_level' must be one of"):
        options.parse("m", {"graph_optimization_level": "max"})


def test_session_options_reach_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    settings = options.parse("m", {"inter_op_thread_count": "3", "graph_optimization_level": "disable"})
    built = options.session_options(ort, settings)
    assert built.inter_op_num_threads == 3
    assert built.graph_optimization_level == ort.GraphOptimizationLevel.ORT_DISABLE_ALL
