"""How a SavedModel's signatures fill a configuration (completion.py), without TensorFlow.

The signatures are described by hand, as signature_defs.read would give them.
"""

from __future__ import annotations

import json

import pytest

from modelplatform import InvalidArgument, ModelConfig
from modelplatform_tensorflow.completion import complete
from modelplatform_tensorflow.signature_defs import (
    CLASSIFY,
    PREDICT,
    SavedModelSignatures,
    Signature,
    SignatureTensor,
)

X = SignatureTensor("x", "FP32", (-1, 3))
Y = SignatureTensor("y", "FP32", (-1, 3))
EXAMPLES = SignatureTensor("inputs", "BYTES", (-1,))
SCORES = SignatureTensor("scores", "FP32", (-1, 2))


def signatures(*found: Signature) -> SavedModelSignatures:
    document = {s.name: {"method_name": s.method_name} for s in found}
    document["__saved_model_init_op"] = {"method_name": ""}
    return SavedModelSignatures(("serve",), {s.name: s for s in found}, json.dumps(document))


DEFAULT = Signature("serving_default", PREDICT, (X,), (Y,))
CLASSIFIER = Signature("classify", CLASSIFY, (EXAMPLES,), (SCORES,))


def config(text: dict | None = None) -> ModelConfig:
    return ModelConfig.from_json({"name": "m", **(text or {})})


def test_tf_serving_layout_keeps_the_batch_dimension_and_names_other_signatures():
    completed, routing = complete(config(), signatures(DEFAULT, CLASSIFIER), served_as_is=True)
    assert completed.max_batch_size == 0  # TF Serving puts no limit on a request's batch
    assert (completed.platform, completed.backend) == ("tensorflow_savedmodel", "tensorflow")
    assert [(s.name, s.dims, s.optional) for s in completed.inputs] == [
        ("x", (-1, 3), True),
        ("classify/inputs", (-1,), True),
    ]
    assert [s.name for s in completed.outputs] == ["y", "classify/scores"]
    assert routing.inputs["classify/inputs"].alias == "inputs"
    declared = json.loads(completed.parameters["tfserving.signatures"])
    assert declared == {
        "serving_default": {"method_name": "predict", "inputs": {"x": "x"}, "outputs": {"y": "y"}},
        "classify": {
            "method_name": "classify",
            "inputs": {"inputs": "classify/inputs"},
            "outputs": {"scores": "classify/scores"},
            "examples": "serialized",
        },
    }
    shown = json.loads(completed.parameters["tfserving.signature_def"])
    assert sorted(shown) == ["__saved_model_init_op", "classify", "serving_default"]


def test_triton_layout_batches_by_four_and_one_signature_is_required():
    completed, _ = complete(
        config({"platform": "tensorflow_savedmodel"}), signatures(DEFAULT), served_as_is=False
    )
    assert completed.max_batch_size == 4  # Triton's auto-complete default
    assert [(s.name, s.dims, s.optional) for s in completed.inputs] == [("x", (3,), False)]


def test_a_configured_max_batch_size_strips_the_batch_dimension():
    completed, _ = complete(config({"max_batch_size": 64}), signatures(DEFAULT), served_as_is=True)
    assert completed.max_batch_size == 64
    assert completed.inputs[0].dims == (3,)


def test_a_fixed_first_dimension_cannot_batch():
    fixed = Signature("serving_default", PREDICT, (SignatureTensor("x", "FP32", (2, 3)),), (Y,))
    with pytest.raises(InvalidArgument, match="no dynamic first dimension"):
        complete(config({"max_batch_size": 8}), signatures(fixed), served_as_is=True)
    completed, _ = complete(config(), signatures(fixed), served_as_is=False)
    assert completed.max_batch_size == 0


def test_the_signature_parameter_chooses_the_primary():
    chosen = config({"parameters": {"TF_SIGNATURE_DEF": {"string_value": "classify"}}})
    completed, routing = complete(chosen, signatures(DEFAULT, CLASSIFIER), served_as_is=True)
    assert routing.primary == "classify"
    assert [s.name for s in completed.inputs] == ["inputs", "serving_default/x"]
    missing = config({"parameters": {"TF_SIGNATURE_DEF": {"string_value": "nope"}}})
    with pytest.raises(InvalidArgument, match="TF_SIGNATURE_DEF names 'nope'"):
        complete(missing, signatures(DEFAULT), served_as_is=True)


def test_declared_tensors_must_be_the_primary_signatures():
    declared = {
        "max_batch_size": 8,
        "input": [{"name": "x", "data_type": "TYPE_INT32", "dims": [3]}],
        "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [3]}],
    }
    with pytest.raises(InvalidArgument, match="'x' is INT32 in the configuration, FP32 in signature"):
        complete(config(declared), signatures(DEFAULT, CLASSIFIER), served_as_is=False)
    declared["input"][0]["data_type"] = "TYPE_FP32"
    completed, routing = complete(config(declared), signatures(DEFAULT, CLASSIFIER), served_as_is=False)
    assert [s.name for s in completed.inputs] == ["x"]  # kept as written: only the primary is served
    assert set(routing.outputs) == {"serving_default"}
    declared["output"][0]["name"] = "z"
    with pytest.raises(InvalidArgument, match="output 'z' is not in signature 'serving_default'"):
        complete(config(declared), signatures(DEFAULT), served_as_is=False)


def test_colliding_names_are_refused():
    a_b = Signature("a/b", PREDICT, (SignatureTensor("c", "FP32", (-1,)),), (Y,))
    a = Signature(
        "a", PREDICT, (SignatureTensor("b/c", "FP32", (-1,)),), (SignatureTensor("z", "FP32", (-1,)),)
    )
    with pytest.raises(InvalidArgument, match="would both be named 'a/b/c'"):
        complete(config(), signatures(DEFAULT, a_b, a), served_as_is=True)
