"""The binary codec on its own: zero-copy inputs, raw requests, output selection."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from modelplatform import (
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    Limits,
    RequestedOutput,
    Tensor,
)
from modelplatform.base.config_reader import from_proto, parse_text
from modelplatform_binary_data.codec import BinaryCodec

LIMITS = Limits(max_tensor_elements=1 << 20, max_bytes_element=1 << 20)
SIMPLE = from_proto(parse_text("""
name: "simple" backend: "python" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
        { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]
"""))  # fmt: skip
IDENTITY_BYTES = from_proto(parse_text("""
name: "identity_bytes" backend: "python"
input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
"""))  # fmt: skip
IDENTITY_FP16 = from_proto(parse_text("""
name: "identity_fp16" backend: "python"
input [ { name: "INPUT0" data_type: TYPE_FP16 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP16 dims: [ -1 ] } ]
"""))  # fmt: skip


def _body(header: dict, *blobs: bytes) -> tuple[bytes, int]:
    head = json.dumps(header).encode()
    return head + b"".join(blobs), len(head)


@pytest.mark.parametrize("shift", [0, 1, 2, 3])
def test_binary_inputs_are_views_over_the_body_or_small_aligned_copies(shift):
    a, b = np.arange(16, dtype="<i4"), np.full(16, 7, dtype="<i4")
    inputs = [{"name": n, "datatype": "INT32", "shape": [1, 16],
               "parameters": {"binary_data_size": 64}} for n in ("INPUT0", "INPUT1")]  # fmt: skip
    head = json.dumps({"inputs": inputs}).encode()
    head += b" " * ((-len(head) + shift) % 4)  # JSON may end in spaces: the inputs start `shift` past 4
    body = head + a.tobytes() + b.tobytes()
    request = BinaryCodec().decode(body, len(head), "simple", "", SIMPLE, LIMITS)
    whole = np.frombuffer(body, np.uint8)
    for tensor, expected in zip(request.inputs, (a, b), strict=True):
        # Aligned: a view (zero-copy); misaligned and small: an aligned copy (datatypes.aligned).
        assert np.shares_memory(tensor.data, whole) == (shift == 0)
        assert tensor.data.flags.aligned and not tensor.data.flags.writeable
        assert tensor.data.shape == (1, 16)
        assert tensor.data.reshape(-1).tolist() == expected.tolist()


def test_bytes_input_with_nuls_and_non_utf8():
    items = [b"a\x00b", b"\xff\xfe", b""]
    blob = b"".join(struct.pack("<I", len(x)) + x for x in items)
    inputs = [{"name": "INPUT0", "datatype": "BYTES", "shape": [3],
               "parameters": {"binary_data_size": len(blob)}}]  # fmt: skip
    body, length = _body({"inputs": inputs}, blob)
    request = BinaryCodec().decode(body, length, "identity_bytes", "", IDENTITY_BYTES, LIMITS)
    assert request.inputs[0].data.tolist() == items


@pytest.mark.parametrize(
    "size, extra, message",
    [(65, b"", "past the end of the body"), (64, b"\0", "1 bytes after the last binary input")],
)
def test_sizes_that_disagree_with_the_body(size, extra, message):
    inputs = [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 16],
               "parameters": {"binary_data_size": size}}]  # fmt: skip
    body, length = _body({"inputs": inputs}, b"\0" * 64, extra)
    with pytest.raises(InvalidArgument, match=message):
        BinaryCodec().decode(body, length, "simple", "", SIMPLE, LIMITS)


def test_raw_request_fills_the_single_input():
    data = np.array([1, 2, 3, 4, 5], dtype="<f2")
    body = data.tobytes()
    request = BinaryCodec().decode(body, 0, "identity_fp16", "1", IDENTITY_FP16, LIMITS)
    (tensor,) = request.inputs
    assert (tensor.name, tensor.datatype, tensor.shape) == ("INPUT0", "FP16", (5,))
    assert np.shares_memory(tensor.data, np.frombuffer(body, np.uint8))


def test_raw_request_bytes_and_refusals():
    blob = struct.pack("<I", 2) + b"\x00\xff" + struct.pack("<I", 0)
    request = BinaryCodec().decode(blob, 0, "identity_bytes", "", IDENTITY_BYTES, LIMITS)
    assert request.inputs[0].data.tolist() == [b"\x00\xff", b""]
    with pytest.raises(InvalidArgument, match="INPUT0.*BYTES"):
        truncated = struct.pack("<I", 9) + b"ab"
        BinaryCodec().decode(truncated, 0, "identity_bytes", "", IDENTITY_BYTES, LIMITS)
    with pytest.raises(InvalidArgument, match="needs a model with one input"):
        BinaryCodec().decode(b"\0" * 64, 0, "simple", "", SIMPLE, LIMITS)
    with pytest.raises(InvalidArgument, match="multiple of 2"):
        BinaryCodec().decode(b"\0" * 3, 0, "identity_fp16", "", IDENTITY_FP16, LIMITS)


def _response() -> InferenceResponse:
    outputs = [Tensor.from_array("A", np.arange(3, dtype=np.int32)),
               Tensor.from_array("B", np.array([b"x\xff"], dtype=object))]  # fmt: skip
    return InferenceResponse("m", "1", outputs)


def test_outputs_binary_by_request_parameter_with_per_output_override():
    outputs = [RequestedOutput("A", {"binary_data": False}), RequestedOutput("B")]
    request = InferenceRequest("m", [], parameters={"binary_data_output": True}, outputs=outputs)
    codec = BinaryCodec()
    assert codec.wants_response(request)
    encoded = codec.encode(_response(), request)
    length = int(encoded.headers["Inference-Header-Content-Length"])
    header = json.loads(encoded.joined()[:length])
    a, b = header["outputs"]
    assert "parameters" not in a and a["data"] == [0, 1, 2]  # JSON outputs carry no parameters
    assert b["parameters"] == {"binary_data_size": 6}
    assert encoded.joined()[length:] == struct.pack("<I", 2) + b"x\xff"
    assert encoded.content_type == "application/octet-stream"


def test_no_binary_flags_means_json():
    assert not BinaryCodec().wants_response(InferenceRequest("m", []))
    with pytest.raises(InvalidArgument, match="true or false"):
        BinaryCodec().wants_response(InferenceRequest("m", [], parameters={"binary_data_output": 1}))


def test_bf16_travels_binary_both_ways_and_not_as_json():
    """BF16 is carried as uint16 bit patterns (the upper half of each float32)."""
    values = np.array([1.0, -2.5, 65536.0], dtype=np.float32)
    bits = (values.view(np.uint32) >> 16).astype("<u2")
    config = from_proto(parse_text("""
    name: "identity_bf16" backend: "python"
    input [ { name: "INPUT0" data_type: TYPE_BF16 dims: [ -1 ] } ]
    output [ { name: "OUTPUT0" data_type: TYPE_BF16 dims: [ -1 ] } ]
    """))  # fmt: skip
    header = {"inputs": [{"name": "INPUT0", "datatype": "BF16", "shape": [3],
                          "parameters": {"binary_data_size": 6}}]}  # fmt: skip
    body, length = _body(header, bits.tobytes())
    request = BinaryCodec().decode(body, length, "identity_bf16", "", config, LIMITS)
    (tensor,) = request.inputs
    assert tensor.datatype == "BF16" and tensor.data.tolist() == bits.tolist()
    output = Tensor("OUTPUT0", "BF16", (3,), tensor.data)
    wanted = InferenceRequest("identity_bf16", [], parameters={"binary_data_output": True})
    encoded = BinaryCodec().encode(InferenceResponse("identity_bf16", "1", [output]), wanted)
    split = int(encoded.headers["Inference-Header-Content-Length"])
    out = json.loads(encoded.joined()[:split])["outputs"][0]
    assert out["datatype"] == "BF16" and out["parameters"] == {"binary_data_size": 6}
    restored = (np.frombuffer(encoded.joined()[split:], "<u2").astype(np.uint32) << 16).view(np.float32)
    assert restored.tolist() == values.tolist()  # these three values are exact in BF16
    as_json = {"inputs": [{"name": "INPUT0", "datatype": "BF16", "shape": [3], "data": [1.0, 2.0, 3.0]}]}
    json_body, json_length = _body(as_json)
    with pytest.raises(InvalidArgument, match="BF16"):
        BinaryCodec().decode(json_body, json_length, "identity_bf16", "", config, LIMITS)
