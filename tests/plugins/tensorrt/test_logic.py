"""The tensorrt plugin's GPU-free logic: datatypes, config checks, profiles, buffer plans."""

from __future__ import annotations

import pytest

from modelplatform import InvalidArgument, ModelConfig, Unsupported
from modelplatform_tensorrt.checks import complete
from modelplatform_tensorrt.dtypes import datatype_of
from modelplatform_tensorrt.engine_info import EngineInfo, EngineTensor, Profile
from modelplatform_tensorrt.planning import plan_buffers
from modelplatform_tensorrt.shapes import choose_profile

SMALL = Profile((1, 16), (4, 16), (8, 16))
LARGE = Profile((9, 16), (16, 16), (32, 16))


def _engine(*profiles: Profile, out_dtype: str = "FP32") -> EngineInfo:
    profiles = profiles or (SMALL,)
    inputs = tuple(EngineTensor(n, True, "FP32", (-1, 16), profiles) for n in ("INPUT0", "INPUT1"))
    outputs = tuple(EngineTensor(n, False, out_dtype, (-1, 16)) for n in ("OUTPUT0", "OUTPUT1"))
    return EngineInfo(inputs + outputs, len(profiles))


def _config(max_batch: int = 8, dims: list[int] | None = None, dtype: str = "TYPE_FP32") -> ModelConfig:
    dims = dims or [16]
    tensors = lambda names: [{"name": n, "data_type": dtype, "dims": dims} for n in names]  # noqa: E731 - a one-line helper, local to this test
    return ModelConfig.from_json(
        {
            "name": "trt",
            "platform": "tensorrt_plan",
            "max_batch_size": max_batch,
            "input": tensors(["INPUT0", "INPUT1"]),
            "output": tensors(["OUTPUT0", "OUTPUT1"]),
        }
    )


def test_trt_datatypes_map_to_oip_and_fp8_is_refused():
    assert datatype_of("m", "x", "FLOAT") == "FP32"
    assert datatype_of("m", "x", "HALF") == "FP16"
    assert datatype_of("m", "x", "INT64") == "INT64"
    with pytest.raises(InvalidArgument, match="TensorRT type FP8"):
        datatype_of("m", "x", "FP8")


def test_matching_config_passes_unchanged():
    config = _config()
    assert complete(config, _engine()) is config


def test_omitted_tensors_and_batch_come_from_the_engine():
    config = complete(ModelConfig.from_json({"name": "trt", "platform": "tensorrt_plan"}), _engine())
    assert config.max_batch_size == 8
    assert [(s.name, s.datatype, s.dims) for s in config.inputs][0] == ("INPUT0", "FP32", (16,))
    assert [s.name for s in config.outputs] == ["OUTPUT0", "OUTPUT1"]


def test_max_batch_size_beyond_every_profile_is_refused():
    with pytest.raises(InvalidArgument, match=r"max_batch_size 16 is larger than the largest batch .* \(8\)"):
        complete(_config(max_batch=16), _engine())
    assert complete(_config(max_batch=16), _engine(SMALL, LARGE)).max_batch_size == 16


def test_datatype_and_dims_mismatches_name_both_sides():
    with pytest.raises(
        InvalidArgument, match="input 'INPUT0' is INT32 in the configuration, FP32 in the engine"
    ):
        complete(_config(dtype="TYPE_INT32"), _engine())
    with pytest.raises(InvalidArgument, match=r"shape \[-1, 8\] in the configuration; the engine allows 16"):
        complete(_config(dims=[8]), _engine())
    with pytest.raises(
        InvalidArgument, match=r"shape \[-1, 16, 1\] in the configuration, \[-1, 16\] in the engine"
    ):
        complete(_config(dims=[16, 1]), _engine())


def test_fixed_batch_engine_cannot_serve_a_batching_config():
    fixed = EngineInfo((EngineTensor("INPUT0", True, "FP32", (4, 16), ()),), 1)
    config = ModelConfig.from_json(
        {
            "name": "trt",
            "max_batch_size": 4,
            "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [16]}],
        }
    )
    with pytest.raises(InvalidArgument, match="not dynamic"):
        complete(config, fixed)


def test_unknown_and_undeclared_tensors_are_refused():
    config = _config()
    engine = _engine()
    extra = EngineInfo(
        engine.tensors + (EngineTensor("MASK", True, "BOOL", (-1,), (Profile((1,), (1,), (8,)),)),), 1
    )
    with pytest.raises(InvalidArgument, match=r"engine input\(s\) \['MASK'\] are not declared"):
        complete(config, extra)
    renamed = ModelConfig.from_json(
        {**config.to_json(), "output": [{"name": "Y", "data_type": "TYPE_FP32", "dims": [16]}]}
    )
    with pytest.raises(InvalidArgument, match="output 'Y' is not an engine output"):
        complete(renamed, engine)


def test_profile_choice_prefers_current_and_switches_when_needed():
    engine = _engine(SMALL, LARGE)
    shapes = {"INPUT0": (4, 16), "INPUT1": (4, 16)}
    assert choose_profile("m", engine, shapes, current=0) == 0
    assert choose_profile("m", engine, {"INPUT0": (20, 16), "INPUT1": (20, 16)}, current=0) == 1
    assert choose_profile("m", engine, {"INPUT0": (2, 16), "INPUT1": (2, 16)}, current=1) == 0


def test_shape_outside_every_profile_names_the_ranges():
    with pytest.raises(
        InvalidArgument, match=r"input 'INPUT0' shape \[9, 16\] is outside .*profile 0: \[1, 16\]..\[8, 16\]"
    ):
        choose_profile("m", _engine(), {"INPUT0": (9, 16), "INPUT1": (9, 16)})


def test_buffers_are_planned_for_the_largest_profile():
    engine = _engine(SMALL, LARGE)
    plans = {
        p.name: p
        for p in plan_buffers("m", engine, {"OUTPUT0": [(8, 16), (32, 16)], "OUTPUT1": [(8, 16), (32, 16)]})
    }
    assert plans["INPUT0"].elements == 32 * 16
    assert plans["INPUT0"].nbytes == 32 * 16 * 4
    assert plans["OUTPUT1"].elements == 32 * 16


def test_unbounded_output_is_unsupported():
    with pytest.raises(Unsupported, match="data-dependent"):
        plan_buffers("m", _engine(), {"OUTPUT0": [(-1, 16)], "OUTPUT1": [(8, 16)]})
