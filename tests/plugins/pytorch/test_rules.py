"""The backend's pure rules without torch: parameters, placement, binding."""

from __future__ import annotations

import pytest

from modelplatform import InvalidArgument, ModelConfig
from modelplatform_pytorch import binding, parameters, placement

TENSOR = binding.Argument("x", "TensorType", "Tensor")


def _config(**document) -> ModelConfig:
    return ModelConfig.from_json({"name": "m", **document})


def _io(*names: str) -> list[dict]:
    return [{"name": n, "data_type": "TYPE_FP32", "dims": [4]} for n in names]


def test_parameter_defaults_are_tritons():
    settings = parameters.parse("m", {})
    assert settings == parameters.TorchSettings(True, True, 0, 0, False)


def test_parameters_are_read_with_tritons_booleans_and_aliases():
    settings = parameters.parse(
        "m",
        {
            "INFERENCE_MODE": "off",
            "DISABLE_OPTIMIZED_EXECUTION": "Yes",
            "NUM_THREADS": "2",
            "INTER_OP_THREAD_COUNT": "1",
            "ENABLE_CACHE_CLEANING": "1",
            "DISABLE_CUDNN": "false",  # what the backend does anyway: accepted
            "some_dialect_key": "left to others",
        },
    )
    assert settings == parameters.TorchSettings(False, False, 2, 1, True)


def test_conflicting_alias_and_name_are_refused():
    with pytest.raises(
        InvalidArgument, match="'NUM_THREADS' and 'INTRA_OP_THREAD_COUNT' name the same setting"
    ):
        parameters.parse("m", {"NUM_THREADS": "2", "INTRA_OP_THREAD_COUNT": "3"})


def test_placement_follows_instance_groups_in_order():
    config = _config(
        instance_group=[{"kind": "KIND_CPU", "count": 1}, {"kind": "KIND_GPU", "count": 3, "gpus": [1, 2]}]
    )
    placed = [placement.place(config, i, cuda_available=True) for i in range(4)]
    assert [p.device for p in placed] == ["cpu", "cuda:1", "cuda:2", "cuda:1"]


def test_kind_auto_is_a_gpu_only_where_cuda_is():
    assert placement.place(_config(), 0, cuda_available=False).device == "cpu"
    assert placement.place(_config(), 0, cuda_available=True).device == "cuda:0"
    assert placement.place(_config(instance_group=[{"kind": "KIND_MODEL"}]), 0, True).kind == "KIND_MODEL"


def test_binding_by_argument_names_whatever_the_config_order():
    config = _config(input=_io("b", "a"), output=_io("y"))
    bound = binding.bind(config, [binding.Argument("a", "TensorType"), binding.Argument("b", "TensorType")])
    assert (bound.inputs, bound.rule, bound.outputs) == (("a", "b"), "argument names", {"y": 0})


def test_binding_by_index_for_inputs_and_outputs():
    config = _config(input=_io("IN__1", "IN__0"), output=_io("OUT__1", "OUT__0"))
    bound = binding.bind(config, [TENSOR, binding.Argument("z", "TensorType")])
    assert (bound.inputs, bound.rule) == (("IN__0", "IN__1"), "name__index")
    assert bound.outputs == {"OUT__1": 1, "OUT__0": 0}


def test_binding_falls_back_to_configuration_order():
    config = _config(input=_io("first", "INPUT__0"), output=_io("out", "OUTPUT__0"))
    bound = binding.bind(config, [TENSOR, binding.Argument("z", "TensorType")])
    assert (bound.inputs, bound.rule) == (("first", "INPUT__0"), "configuration order")
    assert bound.outputs == {"out": 0, "OUTPUT__0": 1}


def test_dict_input_takes_every_configured_name():
    config = _config(input=_io("p", "q"), output=_io("r"))
    bound = binding.bind(config, [binding.Argument("inputs", "DictType", "Dict[str, Tensor]")])
    assert bound.dict_input and bound.inputs == ("p", "q")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([TENSOR, binding.Argument("d", "DictType", "Dict[str, Tensor]")], "forward argument 'd' is a dict"),
        ([TENSOR, binding.Argument("n", "IntType", "int")], "forward argument 'n' is int"),
        ([TENSOR], "declares 2 inputs, forward takes 1 \\(x\\)"),
    ],
)
def test_forward_signatures_the_backend_cannot_feed_are_refused(arguments, message):
    config = _config(input=_io("x", "y"), output=_io("o"))
    with pytest.raises(InvalidArgument, match=message):
        binding.bind(config, arguments)


def test_index_convention_with_a_gap_is_refused():
    config = _config(input=_io("IN__0", "IN__2"), output=_io("o"))
    with pytest.raises(InvalidArgument, match="must be 0..1, each once"):
        binding.bind(config, [TENSOR, binding.Argument("z", "TensorType")])
