"""tf.Example features for classify and regress, from JSON or from protos.

A feature is a kind (``bytes``, ``float``, ``int64``) and a value list.
JSON follows TF Serving's typing (protocol-notes B6): a number with a point
or exponent is float, an integer is int64, ``true``/``false`` int64 1/0, a
string or ``{"b64": ...}`` bytes. Features reach the model's inputs by the
input's tensor name, with TF's Example-parsing checks: the kind must match
the input's type (an int64 feature does not feed a float input, as in TF
Serving) and every example gives the same number of values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from modelplatform import InvalidArgument
from modelplatform.datatypes import element_count, numpy_dtype

from .errors import format_error, json_type, quote
from .json_tensors import decode_b64, is_b64
from .limits import Limits
from .signatures import Alias, Signature
from .tf_types import TYPE_STRINGS

INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1
FLOAT32_MAX = float(np.finfo(np.float32).max)
#: Which feature kind feeds which input datatype.
KIND_OF: dict[str, str] = {"FP32": "float", "FP64": "float", "BYTES": "bytes"}
_KIND_TYPE = {"bytes": "string", "float": "float", "int64": "int64"}


@dataclass(slots=True)
class Feature:
    kind: str = ""
    values: list[Any] = field(default_factory=list)


Example = dict[str, Feature]


def examples_from_json(doc: dict[str, Any]) -> list[Example]:
    """The request's examples, each merged over the optional ``context``."""
    context = example_from_json(doc["context"]) if "context" in doc else {}
    if "examples" not in doc:
        raise format_error(doc, "When method is classify, key 'examples' is expected and was not found")
    examples = doc["examples"]
    if not isinstance(examples, list):
        raise format_error(doc, "Expecting 'examples' value to be an list/array")
    if not examples:
        raise format_error(doc, "'examples' value is an empty array")
    return [{**context, **example_from_json(item)} for item in examples]


def example_from_json(value: Any) -> Example:
    if not isinstance(value, dict):
        raise InvalidArgument(f"Example must be JSON object but got JSON {json_type(value)}")
    example: Example = {}
    for name, content in value.items():
        feature = Feature()
        for item in content if isinstance(content, list) else [content]:
            _add_value(item, name, feature)
        example[name] = feature
    return example


def _add_value(value: Any, name: str, feature: Feature) -> None:
    if value is None or isinstance(value, list) or (isinstance(value, dict) and not is_b64(value)):
        raise InvalidArgument(f"Feature: {name} has element with unexpected JSON type: {json_type(value)}")
    if isinstance(value, bool):
        _append(feature, name, "int64", int(value))
    elif isinstance(value, (str, dict)):
        data = value.encode() if isinstance(value, str) else decode_b64(value)
        _append(feature, name, "bytes", data)
    elif isinstance(value, float) or value > UINT64_MAX or value < -(2**63):
        if abs(value) > FLOAT32_MAX and np.isfinite(float(value)):
            raise InvalidArgument(
                f"Cannot convert JSON value: {quote(value)} to float without loss of precision."
            )
        _append(feature, name, "float", float(value))
    elif value > INT64_MAX:
        raise InvalidArgument(f"Feature: {name} has uint64 element. Only int64 is supported.")
    else:
        _append(feature, name, "int64", value)


def _append(feature: Feature, name: str, kind: str, value: Any) -> None:
    if feature.kind and feature.kind != kind:
        raise InvalidArgument(f"Unexpected element type in feature: {name} expecting type: {feature.kind}")
    feature.kind = kind
    feature.values.append(value)


# ---- features -> model inputs ----


def signature_inputs(examples: list[Example], signature: Signature, limits: Limits) -> dict[str, np.ndarray]:
    """What a classify or regress signature takes: the examples serialized into its one
    string input (a SavedModel's, ``"examples": "serialized"``), else features by tensor name."""
    if signature.serialized_examples:
        return {signature.inputs[0].spec.name: serialized_examples(examples)}
    return inputs_from_examples(examples, signature.inputs, limits)


def inputs_from_examples(
    examples: list[Example], aliases: tuple[Alias, ...], limits: Limits
) -> dict[str, np.ndarray]:
    """One batched array per signature input, named by the input's tensor name."""
    return {a.spec.name: _batch(examples, a, limits) for a in aliases}


def _batch(examples: list[Example], alias: Alias, limits: Limits) -> np.ndarray:
    name, datatype = alias.spec.name, alias.spec.datatype
    wanted = KIND_OF.get(datatype, "int64")
    rows = []
    for index, example in enumerate(examples):
        feature = example.get(name)
        if feature is None or not feature.kind:
            raise InvalidArgument(
                f"Feature: {name} (data type: {TYPE_STRINGS[datatype]}) is required but could not be found."
            )
        if feature.kind != wanted:
            raise InvalidArgument(
                f"Name: <unknown>, Key: {name}, Index: {index}.  Data types don't match. "
                f"Data type: {_KIND_TYPE[feature.kind]} but expected type: {TYPE_STRINGS[datatype]}"
            )
        rows.append(feature.values)
    shape = _shape(rows, alias, name)
    element_count(shape, limits.max_tensor_elements)
    if datatype == "BYTES":
        flat = np.empty(len(rows) * len(rows[0]), dtype=object)
        flat[:] = [v for row in rows for v in row]
        return flat.reshape(shape)
    return np.array(rows, dtype=numpy_dtype(datatype)).reshape(shape)


def _shape(rows: list[list[Any]], alias: Alias, name: str) -> list[int]:
    """[N] for a rank-1 input (one value each), else [N] + the input's item shape."""
    width = len(rows[0])
    for index, row in enumerate(rows):
        if len(row) != width:
            raise InvalidArgument(
                f"Name: <unknown>, Key: {name}, Index: {index}.  Number of values != expected.  "
                f"Values size: {len(row)} but output shape: [{width}]"
            )
    item = list(alias.full_shape[1:])
    if not item:
        if width != 1:
            raise InvalidArgument(
                f"Name: <unknown>, Key: {name}, Index: 0.  Number of values != expected.  "
                f"Values size: {width} but output shape: []"
            )
        return [len(rows)]
    if item.count(-1) == 1:
        known = int(np.prod([d for d in item if d != -1]))
        item[item.index(-1)] = width // known if known and width % known == 0 else -1
    if -1 in item or int(np.prod(item)) != width:
        raise InvalidArgument(
            f"Name: <unknown>, Key: {name}, Index: 0.  Number of values != expected.  "
            f"Values size: {width} but output shape: {item}"
        )
    return [len(rows), *item]


def serialized_examples(examples: list[Example]) -> np.ndarray:
    """Each example (its context merged in) as a serialized ``tensorflow.Example``, as TF
    Serving feeds a SavedModel's classify and regress signatures."""
    from .protos import tensorflow_pb2  # the gRPC messages: imported when a model needs them

    serialized = np.empty(len(examples), dtype=object)
    for index, example in enumerate(examples):
        proto = tensorflow_pb2.Example()
        for name, feature in example.items():
            entry = proto.features.feature[name]
            if feature.kind:
                getattr(entry, f"{feature.kind}_list").value.extend(feature.values)
        serialized[index] = proto.SerializeToString(deterministic=True)
    return serialized


def example_from_proto(proto: Any) -> Example:
    """A ``tensorflow.Example`` message as features."""
    example: Example = {}
    for name, feature in proto.features.feature.items():
        kind = feature.WhichOneof("kind")
        if kind is None:
            example[name] = Feature()
            continue
        values = list(getattr(feature, kind).value)
        example[name] = Feature(kind.removesuffix("_list"), values)
    return example


def examples_of(request_input: Any) -> list[Example]:
    """The examples of a ``tensorflow.serving.Input`` message, each merged over its context."""
    kind = request_input.WhichOneof("kind")
    if kind == "example_list":
        examples = [example_from_proto(e) for e in request_input.example_list.examples]
    elif kind == "example_list_with_context":
        listed = request_input.example_list_with_context
        context = example_from_proto(listed.context)
        examples = [{**context, **example_from_proto(e)} for e in listed.examples]
    else:
        examples = []
    if not examples:
        raise InvalidArgument("Input is empty")
    return examples
