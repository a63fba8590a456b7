"""ModelInfer on the wire (rpc/wire.py): the same messages protobuf reads and writes, minus its copies."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.rpc.wire import WALK_FROM_BYTES, read_infer_request, write_infer_response

names = st.text(min_size=0, max_size=12)


@st.composite
def requests(draw: st.DrawFn) -> pb.ModelInferRequest:
    message = pb.ModelInferRequest(model_name=draw(names), model_version=draw(names), id=draw(names))
    for key in draw(st.lists(names, max_size=3, unique=True)):
        message.parameters[key].int64_param = draw(st.integers(-(2**63), 2**63 - 1))
    count = draw(st.integers(0, 3))
    for index in range(count):
        message.inputs.add(name=f"INPUT{index}", datatype="UINT8", shape=[draw(st.integers(0, 4))])
    big = draw(st.booleans())  # over the walking threshold, or under it
    for index in range(count if draw(st.booleans()) else 0):
        size = draw(st.integers(0, 64)) + (WALK_FROM_BYTES if big and index == 0 else 0)
        message.raw_input_contents.append(bytes([index + 1]) * size)
    message.outputs.add(name=draw(names))
    return message


@settings(max_examples=200, deadline=None)
@given(requests())
def test_a_request_reads_as_protobuf_reads_it(message: pb.ModelInferRequest) -> None:
    data = message.SerializeToString()
    call = read_infer_request(data)
    expected = pb.ModelInferRequest.FromString(data)
    assert [bytes(raw) for raw in call.raw] == list(expected.raw_input_contents)
    rest = pb.ModelInferRequest()
    rest.CopyFrom(expected)
    del rest.raw_input_contents[:]
    copy = pb.ModelInferRequest()
    copy.CopyFrom(call.message)
    del copy.raw_input_contents[:]
    assert copy == rest
    assert call.model_name == expected.model_name


def test_large_raw_inputs_are_views_of_the_received_bytes() -> None:
    message = pb.ModelInferRequest(model_name="m")
    message.inputs.add(name="INPUT0", datatype="FP32", shape=[WALK_FROM_BYTES])
    message.raw_input_contents.append(np.arange(WALK_FROM_BYTES, dtype=np.float32).tobytes())
    data = message.SerializeToString()
    (raw,) = read_infer_request(data).raw
    assert isinstance(raw, memoryview) and raw.obj is data
    assert np.array_equal(np.frombuffer(raw, np.float32), np.arange(WALK_FROM_BYTES, dtype=np.float32))


@pytest.mark.parametrize(
    "data",
    [
        b"\x3a\xff\xff\xff\xff\x0f" + b"x" * WALK_FROM_BYTES,  # a raw input longer than the message
        b"\x0a\x05ab" + b"\x00" * WALK_FROM_BYTES,  # a truncated name, then zeros (field 0)
        b"\xff" * (WALK_FROM_BYTES + 1),  # a varint that never ends
        b"\x0b" + b"\x00" * WALK_FROM_BYTES,  # a group start
    ],
)
def test_a_malformed_request_fails_as_protobuf_fails(data: bytes) -> None:
    with pytest.raises(DecodeError):
        pb.ModelInferRequest.FromString(data)
    with pytest.raises(DecodeError):
        read_infer_request(data)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=4), names)
def test_a_written_response_is_the_message_protobuf_would_write(raw: list[bytes], name: str) -> None:
    metadata = pb.ModelInferResponse(model_name=name, model_version="1")
    for index, _ in enumerate(raw):
        metadata.outputs.add(name=f"OUTPUT{index}", datatype="UINT8", shape=[len(raw[index])])
    views = [memoryview(item) if index % 2 else item for index, item in enumerate(raw)]
    written = pb.ModelInferResponse.FromString(write_infer_response(metadata.SerializeToString(), views))
    expected = pb.ModelInferResponse()
    expected.CopyFrom(metadata)
    expected.raw_output_contents.extend(raw)
    assert written == expected
