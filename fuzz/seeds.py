"""Valid requests of every dialect against the example models: where each target's search starts.

Each seed is already in its target's input format (:mod:`fuzz.targets`): a
selector byte, then the body the dialect reads.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

import numpy as np
import orjson

from modelplatform_grps.protos import grps_pb2 as grps
from modelplatform_oip.protos import grpc_service_pb2 as oip
from modelplatform_tfserving.protos import serving_apis_pb2 as tfs
from modelplatform_tfserving.protos import tensorflow_pb2 as tf

SIXTEEN = list(range(16))


def _oip_tensor(name: str, datatype: str, shape: list[int], data: Any, **extra: Any) -> dict[str, Any]:
    return {"name": name, "datatype": datatype, "shape": shape, "data": data, **extra}


def oip_json_bodies() -> dict[str, list[dict[str, Any]]]:
    """OIP JSON infer bodies, by model."""
    pair = [
        _oip_tensor("INPUT0", "INT32", [1, 16], SIXTEEN),
        _oip_tensor("INPUT1", "INT32", [1, 16], SIXTEEN),
    ]
    nested = [_oip_tensor("INPUT0", "INT32", [2, 16], [SIXTEEN, SIXTEEN]),
              _oip_tensor("INPUT1", "INT32", [2, 16], [SIXTEEN, SIXTEEN])]  # fmt: skip
    text = [str(i) for i in SIXTEEN]
    floats = [float(i) / 2 for i in SIXTEEN]
    return {
        "simple": [
            {"id": "1", "inputs": pair},
            {"inputs": nested, "outputs": [{"name": "OUTPUT0"}], "parameters": {"binary_data_output": False}},
            {"inputs": pair, "outputs": [{"name": "OUTPUT1", "parameters": {"binary_data": True}}]},
        ],
        "simple_string": [
            {
                "inputs": [
                    _oip_tensor("INPUT0", "BYTES", [1, 16], text),
                    _oip_tensor("INPUT1", "BYTES", [1, 16], text),
                ]
            }
        ],
        "simple_onnx": [
            {
                "inputs": [
                    _oip_tensor("INPUT0", "FP32", [1, 16], floats),
                    _oip_tensor("INPUT1", "FP32", [1, 16], floats),
                ]
            }
        ],
        "identity_fp32": [{"inputs": [_oip_tensor("INPUT0", "FP32", [3], [1.5, -2.0, 1e30])]}],
        "identity_fp16": [{"inputs": [_oip_tensor("INPUT0", "FP16", [2], [0.5, 65504.0])]}],
        "identity_bytes": [
            {"inputs": [_oip_tensor("INPUT0", "BYTES", [2], ["hello", "wörld"])]},
            {"inputs": [_oip_tensor("INPUT0", "BYTES", [1], [{"b64": "AAEC"}])]},
        ],
        "saved_model_half_plus_three": [
            {"inputs": [_oip_tensor("x", "FP32", [3], [1.0, 2.0, 5.0])], "parameters": {"timeout": 5000000}}
        ],
    }


def bytes_elements(items: list[bytes]) -> bytes:
    """BYTES tensor data as the binary extension carries it: 4-byte little-endian length, then the bytes."""
    return b"".join(struct.pack("<I", len(item)) + item for item in items)


def oip_binary_requests() -> dict[str, list[tuple[dict[str, Any], bytes]]]:
    """(JSON header, binary tail) pairs, by model; the header's ``binary_data_size`` names the tail's parts."""
    ints = np.arange(16, dtype=np.int32).reshape(1, 16).tobytes()
    text = bytes_elements([str(i).encode() for i in SIXTEEN])
    sized = lambda name, dt, shape, size: {"name": name, "datatype": dt, "shape": shape,  # noqa: E731 - a one-line helper, local to this function
                                           "parameters": {"binary_data_size": size}}  # fmt: skip
    return {
        "simple": [
            (
                {
                    "inputs": [sized("INPUT0", "INT32", [1, 16], 64), sized("INPUT1", "INT32", [1, 16], 64)],
                    "parameters": {"binary_data_output": True},
                },
                ints + ints,
            )
        ],
        "simple_string": [
            (
                {
                    "inputs": [
                        sized("INPUT0", "BYTES", [1, 16], len(text)),
                        sized("INPUT1", "BYTES", [1, 16], len(text)),
                    ],
                    "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}],
                },
                text + text,
            )
        ],
        "identity_bytes": [
            ({"inputs": [sized("INPUT0", "BYTES", [2], 13)]}, bytes_elements([b"abc", b"\x00\xff"]))
        ],
        "identity_fp16": [
            ({"inputs": [sized("INPUT0", "FP16", [2], 4)]}, np.array([1, 2], np.float16).tobytes())
        ],
        "saved_model_half_plus_three": [
            (
                {"inputs": [sized("x", "FP32", [2], 8), _oip_tensor("x2", "FP32", [1], [1.0])]},
                np.array([1, 2], np.float32).tobytes(),
            )
        ],
    }


def oip_grpc_requests() -> list[oip.ModelInferRequest]:
    """ModelInferRequest with typed contents and with raw_input_contents."""
    tensor = oip.ModelInferRequest.InferInputTensor
    typed = oip.ModelInferRequest(model_name="simple", id="7", inputs=[
        tensor(name="INPUT0", datatype="INT32", shape=[1, 16], contents=oip.InferTensorContents(int_contents=SIXTEEN)),
        tensor(name="INPUT1", datatype="INT32", shape=[1, 16], contents=oip.InferTensorContents(int_contents=SIXTEEN)),
    ])  # fmt: skip
    typed.outputs.add(name="OUTPUT0")
    raw = oip.ModelInferRequest(model_name="simple", inputs=[
        tensor(name="INPUT0", datatype="INT32", shape=[1, 16]), tensor(name="INPUT1", datatype="INT32", shape=[1, 16]),
    ])  # fmt: skip
    raw.raw_input_contents.extend([np.arange(16, dtype=np.int32).tobytes()] * 2)
    strings = oip.ModelInferRequest(model_name="simple_string", inputs=[
        tensor(name=n, datatype="BYTES", shape=[1, 16],
               contents=oip.InferTensorContents(bytes_contents=[str(i).encode() for i in SIXTEEN]))
        for n in ("INPUT0", "INPUT1")
    ])  # fmt: skip
    raw_bytes = oip.ModelInferRequest(
        model_name="identity_bytes", inputs=[tensor(name="INPUT0", datatype="BYTES", shape=[2])]
    )
    raw_bytes.raw_input_contents.append(bytes_elements([b"ab", b""]))
    fp = oip.ModelInferRequest(model_name="saved_model_half_plus_three", model_version="123", inputs=[
        tensor(name="x", datatype="FP32", shape=[3], contents=oip.InferTensorContents(fp32_contents=[1, 2, 5]))
    ])  # fmt: skip
    fp.parameters["timeout"].int64_param = 1_000_000
    half = oip.ModelInferRequest(
        model_name="identity_fp16", inputs=[tensor(name="INPUT0", datatype="FP16", shape=[2])]
    )
    half.raw_input_contents.append(np.array([1, 2], np.float16).tobytes())
    return [typed, raw, strings, raw_bytes, fp, half]


def tfserving_json_bodies() -> dict[str, list[dict[str, Any]]]:
    """TF Serving REST bodies by verb: row and columnar predict, b64 strings, classify and regress."""
    return {
        "predict": [
            {"instances": [1.0, 2.0, 5.0]},
            {"signature_name": "serving_default", "instances": [{"x": 1.0}, {"x": 2.0}]},
            {"inputs": {"x": [1.0, 2.0]}, "output_filter": ["y"]},
            {"inputs": [1.0, 2.0]},
            {"instances": [{"b64": base64.b64encode(b"\x00hi").decode()}]},
            {"inputs": {"INPUT0": [{"b64": "AAE="}, "text"]}},
        ],
        "classify": [
            {"signature_name": "tensorflow/serving/classify", "examples": [{"x": 1.0}, {"x": [2.0]}]}
        ],
        "regress": [
            {"signature_name": "tensorflow/serving/regress", "context": {"y": 1}, "examples": [{"x": 1.0}]},
            {"examples": [{"x": 1.0, "s": {"b64": "AA=="}, "i": [1, 2]}]},
        ],
    }


def _tensor(dtype: int, shape: list[int], **values: Any) -> tf.TensorProto:
    proto = tf.TensorProto(dtype=dtype, **values)
    proto.tensor_shape.dim.extend(tf.TensorShapeProto.Dim(size=size) for size in shape)
    return proto


def tfserving_grpc_requests() -> dict[str, list[Any]]:
    """PredictRequest (typed values, tensor_content, strings), ClassificationRequest, RegressionRequest."""
    half = tfs.ModelSpec(name="saved_model_half_plus_three")
    typed = tfs.PredictRequest(model_spec=half, inputs={"x": _tensor(tf.DT_FLOAT, [3], float_val=[1, 2, 5])})
    content = tfs.PredictRequest(model_spec=tfs.ModelSpec(name="identity_fp32", signature_name="serving_default"),
                                 inputs={"INPUT0": _tensor(tf.DT_FLOAT, [2], tensor_content=np.ones(2, np.float32).tobytes())})  # fmt: skip
    ints = tfs.PredictRequest(model_spec=tfs.ModelSpec(name="simple"), inputs={
        n: _tensor(tf.DT_INT32, [1, 16], int_val=SIXTEEN) for n in ("INPUT0", "INPUT1")}, output_filter=["OUTPUT0"])  # fmt: skip
    strings = tfs.PredictRequest(model_spec=tfs.ModelSpec(name="identity_bytes"),
                                 inputs={"INPUT0": _tensor(tf.DT_STRING, [2], string_val=[b"a", b"\xff"])})  # fmt: skip
    labelled = tfs.ModelSpec(name="saved_model_half_plus_three", version_label="stable",
                             signature_name="tensorflow/serving/classify")  # fmt: skip
    example = tf.Example()
    example.features.feature["x"].float_list.value.append(1.0)
    classify = tfs.ClassificationRequest(model_spec=labelled)
    classify.input.example_list.examples.append(example)
    regress = tfs.RegressionRequest(model_spec=tfs.ModelSpec(name="saved_model_half_plus_three",
                                                             signature_name="tensorflow/serving/regress"))  # fmt: skip
    regress.input.example_list_with_context.examples.append(example)
    regress.input.example_list_with_context.context.features.feature["c"].int64_list.value.append(3)
    return {"Predict": [typed, content, ints, strings], "Classify": [classify], "Regress": [regress]}


def grps_json_bodies() -> list[dict[str, Any]]:
    """grps predict bodies: gtensors, ndarray, str_data, gmap."""
    tensors = [
        {"name": n, "dtype": "DT_INT32", "shape": [1, 16], "flat_int32": SIXTEEN}
        for n in ("INPUT0", "INPUT1")
    ]
    return [
        {"model": "simple", "gtensors": {"tensors": tensors}},
        {"model": "saved_model_half_plus_three-123", "ndarray": [[1.0, 2.0], [3.0, 4.0]]},
        {"model": "identity_bytes", "str_data": "hello"},
        {"model": "simple_onnx", "gmap": {"s_f": {"INPUT0": 1.5}, "s_d": {"INPUT1": 2.0}}},
        {
            "model": "identity_fp16",
            "gtensors": {"tensors": [{"dtype": "DT_FLOAT16", "flat_float16": [1.0, 2.0]}]},
        },
    ]


def grps_grpc_requests() -> list[grps.GrpsMessage]:
    """GrpsMessage: gtensors of every flat type, str_data, bin_data, gmap."""
    tensor = grps.GenericTensor
    simple = grps.GrpsMessage(model="simple", gtensors=grps.GenericTensorData(tensors=[
        tensor(name=n, dtype=grps.DT_INT32, shape=[1, 16], flat_int32=SIXTEEN) for n in ("INPUT0", "INPUT1")]))  # fmt: skip
    strings = grps.GrpsMessage(model="simple_string-1", gtensors=grps.GenericTensorData(tensors=[
        tensor(name=n, dtype=grps.DT_STRING, shape=[16], flat_string=[str(i) for i in SIXTEEN])
        for n in ("INPUT0", "INPUT1")]))  # fmt: skip
    floats = grps.GrpsMessage(model="identity_fp32", gtensors=grps.GenericTensorData(tensors=[
        tensor(dtype=grps.DT_FLOAT32, flat_float32=[1.0, 2.0])]))  # fmt: skip
    gmap = grps.GrpsMessage(model="saved_model_half_plus_three")
    gmap.gmap.s_f["x"] = 1.5
    return [simple, strings, floats, gmap,
            grps.GrpsMessage(model="identity_bytes", str_data="hi"),
            grps.GrpsMessage(model="identity_bytes", bin_data=b"\x00\x01")]  # fmt: skip


PYTHON_MODEL = b"class Model:\n    def infer(self, inputs):\n        return {'y': inputs['x']}\n"


def openai_bodies() -> dict[str, list[dict[str, Any]]]:
    """OpenAI-compatible API bodies, by path under the prefix (the example models tiny_lm and tiny_embed)."""
    chat = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
    ]
    return {
        "chat/completions": [
            {"model": "tiny_lm", "messages": chat, "max_tokens": 4, "seed": 1, "n": 2, "stop": ["x"]},
            {
                "model": "tiny_lm",
                "messages": chat,
                "max_completion_tokens": 3,
                "temperature": 0.5,
                "top_p": 0.9,
                "stream": True,
                "stream_options": {"include_usage": True},
                "user": "u",
            },
        ],
        "completions": [
            {"model": "tiny_lm", "prompt": ["one two", "three"], "max_tokens": 3, "stop": "the"},
            {"model": "tiny_lm", "prompt": "once", "max_tokens": 2, "stream": True, "seed": 9},
        ],
        "embeddings": [
            {"model": "tiny_embed", "input": ["a b", "c"], "encoding_format": "float"},
            {"model": "tiny_embed", "input": "one text", "encoding_format": "base64", "dimensions": 32},
        ],
    }


def repository_load_bodies() -> list[dict[str, Any]]:
    """Load bodies: a config override of a bundled model, and an uploaded python model (``file:``)."""
    override = {"backend": "python", "max_batch_size": 8,
                "input": [{"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [16]},
                          {"name": "INPUT1", "data_type": "TYPE_INT32", "dims": [16]}],
                "output": [{"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [16]},
                           {"name": "OUTPUT1", "data_type": "TYPE_INT32", "dims": [16]}],
                "instance_group": [{"kind": "KIND_CPU", "count": 1}],
                "dynamic_batching": {"max_queue_delay_microseconds": "100"}}  # fmt: skip
    uploaded = {"backend": "python", "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [-1]}],
                "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [-1]}]}  # fmt: skip
    return [
        {"parameters": {"config": orjson.dumps(override).decode()}},
        {
            "parameters": {
                "config": orjson.dumps(uploaded).decode(),
                "file:1/model.py": base64.b64encode(PYTHON_MODEL).decode(),
            }
        },
        {},
    ]


def config_texts() -> list[bytes]:
    """config.pbtxt texts: the bundled models' own, and one using most of the fields we read."""
    from .server import REPOSITORY

    bundled = sorted(REPOSITORY.glob("*/config.pbtxt"))
    rich = b"""name: "rich"
backend: "python"
max_batch_size: 4
input [ { name: "a" data_type: TYPE_FP32 dims: [ -1, 2 ] reshape { shape: [ 2 ] } } ]
output [ { name: "b" data_type: TYPE_STRING dims: [ 1 ] } ]
version_policy { specific { versions: [ 1, 3 ] } }
instance_group [ { kind: KIND_CPU count: 2 } ]
dynamic_batching { preferred_batch_size: [ 2, 4 ] max_queue_delay_microseconds: 100 }
model_transaction_policy { decoupled: false }
model_warmup [ { name: "w" batch_size: 1 inputs { key: "a" value { data_type: TYPE_FP32 dims: [ 2 ] zero_data: true } } } ]
parameters { key: "k" value { string_value: "v" } }
"""
    # The folder the target reads is named "rich": a bundled config's own name would not match it.
    own = [
        b"\n".join(line for line in p.read_bytes().splitlines() if not line.startswith(b"name:"))
        for p in bundled
    ]
    return own + [rich]
