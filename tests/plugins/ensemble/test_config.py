"""ensemble_scheduling read from config.pbtxt as Triton writes it, and from Triton's JSON."""

from __future__ import annotations

import pytest

from modelplatform import EnsembleScheduling, EnsembleStep, InvalidArgument, ModelConfig
from modelplatform.base.config_reader import from_proto, parse_text

TRITON_TEXT = """
name: "pipe"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 16 ] } ]
ensemble_scheduling {
  max_inflight_requests: 4
  step [
    { model_name: "a" model_version: -1 input_map { key: "x" value: "IN" } output_map { key: "y" value: "MID" } },
    { model_name: "b" model_version: 2 input_map { key: "x" value: "MID" } output_map { key: "y" value: "OUT" } }
  ]
}
"""


def test_the_steps_are_read_as_triton_writes_them():
    config = from_proto(parse_text(TRITON_TEXT))
    assert config.ensemble_scheduling == EnsembleScheduling(
        (EnsembleStep("a", -1, {"x": "IN"}, {"y": "MID"}), EnsembleStep("b", 2, {"x": "MID"}, {"y": "OUT"})),
        4,
    )
    assert config.composing_models == ("a", "b")


def test_the_json_form_keeps_the_steps_and_reads_back_the_same():
    config = from_proto(parse_text(TRITON_TEXT))
    document = config.to_json()
    assert document["ensemble_scheduling"]["step"][1]["model_version"] == 2  # a number, as Triton's JSON
    assert ModelConfig.from_json(document).ensemble_scheduling == config.ensemble_scheduling


def test_an_ensemble_without_steps_and_steps_without_an_ensemble_are_refused():
    with pytest.raises(InvalidArgument, match="needs ensemble_scheduling"):
        from_proto(parse_text('name: "e" platform: "ensemble"'))
    with pytest.raises(InvalidArgument, match="only for platform"):
        from_proto(
            parse_text('name: "m" backend: "python" ensemble_scheduling { step [ { model_name: "a" } ] }')
        )


def test_other_models_have_no_composing_models():
    assert from_proto(parse_text('name: "m" backend: "python"')).composing_models == ()
