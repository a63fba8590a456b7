"""The gtensors JSON shortcuts (request constructor, direct reply) equal the protobuf paths, or step aside."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from google.protobuf import json_format

from modelplatform import InferenceResponse, Tensor
from modelplatform_grps.converter import to_message
from modelplatform_grps.protos.grps_pb2 import GrpsMessage
from modelplatform_grps.rest.json_io import (
    _plain_gtensors,
    dump_message,
    float_gtensors_reply,
    gtensors_reply,
)
from modelplatform_grps.status import success

TENSOR = {"name": "x", "dtype": "DT_INT32", "shape": [1, 3], "flat_int32": [1, -2, 3]}
DOCUMENTS = {
    "int32": {"model": "m", "gtensors": {"tensors": [TENSOR]}},
    "every-numeric": {
        "gtensors": {
            "tensors": [
                {"dtype": "DT_UINT8", "flat_uint8": [0, 255]},
                {"dtype": "DT_INT8", "flat_int8": [-128, 127]},
                {"dtype": "DT_INT16", "flat_int16": [-5]},
                {"dtype": "DT_INT64", "flat_int64": [2**40]},
                {"dtype": "DT_FLOAT32", "flat_float32": [0.1, 2]},
                {"dtype": "DT_FLOAT64", "flat_float64": [1e300]},
                {"dtype": "DT_STRING", "flat_string": ["a", "é"]},
            ]
        }
    },
    "bool-in-ints": {"gtensors": {"tensors": [{**TENSOR, "flat_int32": [True, 2, 3]}]}},
    "bool-dtype": {"gtensors": {"tensors": [{**TENSOR, "dtype": True}]}},
    "string-for-list": {"gtensors": {"tensors": [{"dtype": "DT_STRING", "flat_string": "abc"}]}},
    "string-number": {"gtensors": {"tensors": [{**TENSOR, "flat_int32": ["1", 2, 3]}]}},
    "float-in-ints": {"gtensors": {"tensors": [{**TENSOR, "flat_int32": [1.0, 2, 3]}]}},
    "out-of-range": {"gtensors": {"tensors": [{**TENSOR, "flat_int32": [2**31, 2, 3]}]}},
    "negative-shape": {"gtensors": {"tensors": [{**TENSOR, "shape": [-1, 3]}]}},
    "camel-case": {"gtensors": {"tensors": [{"dtype": "DT_INT32", "flatInt32": [1]}]}},
    "unknown-key": {"gtensors": {"tensors": [{**TENSOR, "extra": 1}]}},
    "unknown-dtype": {"gtensors": {"tensors": [{**TENSOR, "dtype": "DT_NOPE"}]}},
    "nested-list": {"gtensors": {"tensors": [{**TENSOR, "flat_int32": [[1], 2, 3]}]}},
    "null-name": {"gtensors": {"tensors": [{**TENSOR, "name": None}]}},
}


def _parsed(document: dict) -> GrpsMessage | None:
    try:
        return json_format.ParseDict(copy.deepcopy(document), GrpsMessage(), ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError):
        return None


@pytest.mark.parametrize("name", DOCUMENTS)
def test_shortcut_equals_parse_dict_or_steps_aside(name):
    document = DOCUMENTS[name]
    fast = _plain_gtensors(copy.deepcopy(document))
    if fast is not None:
        assert fast == _parsed(document)
    if name in ("int32", "every-numeric"):
        assert fast is not None  # the common request takes the shortcut
    if name in ("bool-in-ints", "bool-dtype", "string-for-list", "camel-case", "unknown-key", "null-name"):
        assert fast is None  # the constructor would accept or misread these


OUTPUTS = {
    "ints": [
        ("A", "INT32", (1, 3), np.int32),
        ("B", "INT8", (3,), np.int8),
        ("C", "INT16", (2, 1), np.int16),
        ("D", "UINT8", (2,), np.uint8),
    ],
    "bool": [("A", "BOOL", (2,), np.bool_)],
    "int64": [("A", "INT64", (2,), np.int64)],
    "float": [("A", "FP32", (2,), np.float32)],
    "scalar": [("A", "INT32", (), np.int32)],
    "empty": [("A", "INT32", (0,), np.int32)],
    "unnamed": [("", "INT32", (2,), np.int32)],
}


@pytest.mark.parametrize("name", OUTPUTS)
def test_direct_reply_equals_the_message_path_or_steps_aside(name):
    outputs = []
    for tensor_name, datatype, shape, dtype in OUTPUTS[name]:
        data = (np.arange(int(np.prod(shape))) * 7 - 3).astype(dtype).reshape(shape)
        outputs.append(Tensor(tensor_name, datatype, shape, data))
    response = InferenceResponse("m", "1", outputs)
    fast = gtensors_reply(response)
    if fast is not None:
        assert fast == dump_message(success(to_message(response, "gtensors")))
    assert (fast is not None) == (name == "ints")


FLOAT_OUTPUTS = {
    "fp32": ([("A", "FP32", (1, 4))], [0.1, -2.5, 3.4028235e38, 1e-45]),
    "fp64": ([("A", "FP64", (2, 2))], [0.1, -2.5, 1e300, 5e-324]),
    "both": ([("A", "FP32", (2,)), ("B", "FP64", (2,))], [1 / 3, -0.0]),
    "nan": ([("A", "FP32", (2,))], [float("nan"), 1.0]),
    "infinity": ([("A", "FP64", (2,))], [float("inf"), 1.0]),
    "fp16": ([("A", "FP16", (2,))], [0.5, 1.0]),
    "with-ints": ([("A", "FP32", (2,)), ("B", "INT32", (2,))], [1.5, 2.0]),
    "empty": ([("A", "FP32", (0,))], []),
}
DTYPES = {"FP16": np.float16, "FP32": np.float32, "FP64": np.float64, "INT32": np.int32}


@pytest.mark.parametrize("name", FLOAT_OUTPUTS)
def test_float_reply_equals_the_message_path_or_steps_aside(name):
    specs, values = FLOAT_OUTPUTS[name]
    outputs = []
    for tensor_name, datatype, shape in specs:
        count = int(np.prod(shape))
        data = np.resize(np.array(values or [0.0], dtype=np.float64), count).astype(DTYPES[datatype])
        outputs.append(Tensor(tensor_name, datatype, shape, data.reshape(shape)))
    response = InferenceResponse("m", "1", outputs)
    fast = float_gtensors_reply(response)
    if fast is not None:
        assert fast == dump_message(success(to_message(response, "gtensors")))
    assert (fast is not None) == (name in ("fp32", "fp64", "both"))


def test_float_reply_matches_protobuf_for_many_float32_values():
    values = np.random.default_rng(32).standard_normal(2000).astype(np.float32) * np.float32(1e6)
    response = InferenceResponse("m", "1", [Tensor("y", "FP32", (2000,), values)])
    assert float_gtensors_reply(response) == dump_message(success(to_message(response, "ndarray")))
