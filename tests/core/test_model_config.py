import pytest
import structlog

from modelplatform import InvalidArgument
from modelplatform.base.config_reader import from_proto, load_file, parse_json, parse_text

TRITON_CONFIG = """
name: "m"
platform: "onnxruntime_onnx"
max_batch_size: 4
version_policy: { specific: { versions: [1, 3] } }
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 3, -1 ] reshape: { shape: [ 3 ] } optional: true } ]
output [ { name: "OUT" data_type: TYPE_STRING dims: [ 1 ] } ]
instance_group [ { count: 2 kind: KIND_CPU }, { count: 1 } ]
dynamic_batching { preferred_batch_size: [ 2, 4 ] max_queue_delay_microseconds: 100 }
parameters { key: "threads" value: { string_value: "2" } }
"""


def test_triton_subset_parses():
    config = from_proto(parse_text(TRITON_CONFIG))
    assert (config.name, config.platform, config.max_batch_size) == ("m", "onnxruntime_onnx", 4)
    assert config.inputs[0].datatype == "FP32" and config.inputs[0].dims == (3, -1)
    assert config.inputs[0].reshape == (3,) and config.inputs[0].optional
    assert config.outputs[0].datatype == "BYTES"
    assert config.inputs[0].full_shape(config.max_batch_size) == [-1, 3, -1]
    assert config.version_policy.select([1, 2, 3, 4]) == [1, 3]
    assert config.instance_count == 3
    assert config.dynamic_batching.preferred_batch_sizes == (2, 4)
    assert config.dynamic_batching.max_queue_delay_us == 100
    assert config.parameters == {"threads": "2"}


def test_json_form_has_numbers_and_triton_keys():
    data = from_proto(parse_text(TRITON_CONFIG)).to_json()
    assert data["input"][0]["dims"] == [3, -1]
    assert data["input"][0]["data_type"] == "TYPE_FP32"
    assert data["version_policy"] == {"specific": {"versions": [1, 3]}}
    assert data["dynamic_batching"]["max_queue_delay_microseconds"] == 100
    assert data["parameters"] == {"threads": {"string_value": "2"}}
    assert data["model_transaction_policy"] == {"decoupled": False}


def test_every_triton_field_parses_and_a_performance_hint_is_logged():
    # Every field of Triton's configuration is in the proto now (issue 29 point 6): a
    # performance hint parses, is left to the server and logged; see test_config_fields.py.
    with structlog.testing.capture_logs() as logs:
        proto = parse_text(
            'name: "m"\noptimization { input_pinned_memory { enable: true } }\nmax_batch_size: 2\n'
        )
        from_proto(proto)
    assert proto.max_batch_size == 2
    hinted = [entry for entry in logs if entry["event"] == "config_hints_ignored"]
    assert hinted and hinted[0]["fields"] == [
        "optimization",
        "optimization.input_pinned_memory",
        "optimization.input_pinned_memory.enable",
    ]


def test_a_field_triton_does_not_have_is_refused_by_name():
    with pytest.raises(InvalidArgument, match="max_batch_sise"):
        parse_text('name: "m"\nmax_batch_sise: 2\n')
    with pytest.raises(InvalidArgument, match="max_batch_sise"):
        parse_json({"name": "m", "max_batch_sise": 2})


def test_syntax_errors_are_refused():
    with pytest.raises(InvalidArgument):
        parse_text("name: ")


def test_latest_policy_default_and_n():
    config = from_proto(parse_text('name: "m"'))
    assert config.version_policy.select([3, 1, 2]) == [3]
    config = from_proto(parse_json({"name": "m", "version_policy": {"latest": {"num_versions": 2}}}))
    assert config.version_policy.select([3, 1, 2]) == [2, 3]
    config = from_proto(parse_json({"name": "m", "version_policy": {"all": {}}}))
    assert config.version_policy.select([3, 1]) == [1, 3]


def test_folder_name_mismatch_is_refused(tmp_path):
    (tmp_path / "right").mkdir()
    (tmp_path / "right" / "config.pbtxt").write_text('name: "wrong"')
    with pytest.raises(InvalidArgument, match="does not match its folder"):
        load_file(tmp_path / "right")
