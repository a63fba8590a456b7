"""pb_utils' ModelConfig rules and Tensor DLPack without a server (the e2e tests run them in models)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton_python_backend_utils as pb_utils


def _config(**fields) -> pb_utils.ModelConfig:
    return pb_utils.ModelConfig({"name": "m", "max_batch_size": 0, "input": [], "output": [], **fields})


def test_add_input_fills_an_open_declaration_and_refuses_a_change() -> None:
    config = _config(input=[{"name": "X", "data_type": "TYPE_INVALID", "dims": []}])
    config.add_input({"name": "X", "data_type": "TYPE_FP32", "dims": [3]})
    assert config.as_dict()["input"] == [{"name": "X", "data_type": "TYPE_FP32", "dims": [3]}]
    config.add_input({"name": "X", "data_type": "TYPE_FP32", "dims": [3]})  # restated alike: fine
    with pytest.raises(
        ValueError, match="expects datatype TYPE_FP32 for input 'X', model provides TYPE_INT8"
    ):
        config.add_input({"name": "X", "data_type": "TYPE_INT8", "dims": [3]})
    with pytest.raises(ValueError, match="the model expects dims \\[4\\]"):
        config.add_input({"name": "X", "data_type": "TYPE_FP32", "dims": [4]})
    with pytest.raises(ValueError, match="contains property other than"):
        config.add_input({"name": "Y", "data_type": "TYPE_FP32", "dims": [1], "format": "FORMAT_NHWC"})
    with pytest.raises(ValueError, match="missing 'dims' property"):
        config.add_output({"name": "Z", "data_type": "TYPE_FP32"})
    with pytest.raises(ValueError, match="contains property other than"):
        config.add_output({"name": "Z", "data_type": "TYPE_FP32", "dims": [1], "optional": True})


def test_batch_size_scheduler_and_transaction_policy_rules() -> None:
    config = _config(max_batch_size=4)
    with pytest.raises(ValueError, match="configuration specified max_batch_size 4"):
        config.set_max_batch_size(2)
    config.set_max_batch_size(16)
    config.set_dynamic_batching()
    assert config.as_dict()["dynamic_batching"] == {} and config.as_dict()["max_batch_size"] == 16
    with pytest.raises(ValueError, match="'sequence_batching'"):
        _config(sequence_batching={}).set_dynamic_batching()
    config.set_model_transaction_policy({"decoupled": True})
    with pytest.raises(ValueError, match="already set to 'True'"):
        config.set_model_transaction_policy({"decoupled": False})
    with pytest.raises(ValueError, match="other than 'decoupled'"):
        config.set_model_transaction_policy({"stateful": True})


class _OnDevice:
    """An array on a (pretend) CUDA device: kept as it is, never copied."""

    def __dlpack__(self, **_):
        return "device-capsule"

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA


def test_a_device_tensor_is_kept_on_its_device() -> None:
    tensor = pb_utils.Tensor.from_dlpack("gpu", _OnDevice())
    assert not tensor.is_cpu()
    assert tensor.to_dlpack() == "device-capsule"
    assert tensor.__dlpack_device__() == (2, 0)
    with pytest.raises(pb_utils.TritonModelException, match="CPU"):
        tensor.as_numpy()


def test_cpu_dlpack_is_zero_copy_both_ways() -> None:
    source = torch.arange(6, dtype=torch.float32)
    tensor = pb_utils.Tensor.from_dlpack("t", source)
    source[0] = 42.0
    assert tensor.as_numpy()[0] == 42.0  # the same memory
    read_only = pb_utils.Tensor("r", np.frombuffer(np.arange(3, dtype=np.int64).tobytes(), np.int64))
    assert torch.from_dlpack(read_only.to_dlpack()).tolist() == [0, 1, 2]  # a request's input is read-only
    assert np.from_dlpack(read_only).tolist() == [0, 1, 2]
    with pytest.raises(pb_utils.TritonModelException, match="C-contiguous"):
        pb_utils.Tensor.from_dlpack("t", torch.arange(6).reshape(2, 3).T)
    with pytest.raises(pb_utils.TritonModelException, match="needs a DLPack capsule"):
        pb_utils.Tensor.from_dlpack("t", [1, 2, 3])


def test_metric_family_refusals_are_triton_model_exceptions() -> None:
    family = pb_utils.MetricFamily("utils_api_gauge", "g", pb_utils.MetricFamily.GAUGE)
    with pytest.raises(pb_utils.TritonModelException, match="Labels must be a dictionary"):
        family.Metric(labels=["a"])
    with pytest.raises(pb_utils.TritonModelException, match="takes no buckets"):
        family.Metric(buckets=[1.0])
    gauge = family.Metric(labels={"k": "v"})
    gauge.set(2)
    with pytest.raises(pb_utils.TritonModelException, match="observe"):
        gauge.observe(1)
    assert gauge.value() == 2
