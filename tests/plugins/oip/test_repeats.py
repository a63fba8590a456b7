"""ModelInfer calls that repeat (rpc/repeats.py): a template gives what the full decoder gives,
only for calls that differ from it in tensor bytes alone; reply heads are protobuf's bytes."""

from __future__ import annotations

import grpc
import numpy as np
import pytest

from modelplatform import InferenceRequest, InferenceResponse, Limits, Tensor
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc
from modelplatform_oip.rpc.repeats import MAX_PREFIX_BYTES, ReplyHeads, RequestTemplates
from modelplatform_oip.rpc.tensors import decode_request, encode_response_bytes, response_metadata
from modelplatform_oip.rpc.wire import WALK_FROM_BYTES, read_infer_request

LIMITS = Limits(max_tensor_elements=1 << 24, max_bytes_element=1 << 20)


def _message(
    datatype: str = "INT32", shape: tuple[int, ...] = (1, 4), values: int = 1, **fields: object
) -> pb.ModelInferRequest:
    message = pb.ModelInferRequest(model_name="m", **fields)
    dtype = np.dtype(np.float16) if datatype == "FP16" else np.dtype(datatype.lower().replace("fp", "float"))
    for index in range(2):
        message.inputs.add(name=f"INPUT{index}", datatype=datatype, shape=shape)
        array = (np.arange(np.prod(shape)) * values + index).astype(dtype)
        message.raw_input_contents.append(array.astype(dtype.newbyteorder("<")).tobytes())
    return message


def _learned(message: pb.ModelInferRequest) -> RequestTemplates:
    templates = RequestTemplates()
    call = read_infer_request(message.SerializeToString())
    templates.learn(call, decode_request(call.message, LIMITS, None, call.raw))
    return templates


def _full_decode(data: bytes) -> InferenceRequest:
    call = read_infer_request(data)
    return decode_request(call.message, LIMITS, None, call.raw)


def _same(made: InferenceRequest, expected: InferenceRequest) -> None:
    assert (made.model_name, made.model_version, made.id) == (
        expected.model_name,
        expected.model_version,
        expected.id,
    )
    assert made.parameters == expected.parameters and made.parameters is not expected.parameters
    assert [(o.name, o.parameters) for o in made.outputs or []] == [
        (o.name, o.parameters) for o in expected.outputs or []
    ]
    assert (made.outputs is None) == (expected.outputs is None)
    for tensor, want in zip(made.inputs, expected.inputs, strict=True):
        assert (tensor.name, tensor.datatype, tensor.shape, tensor.parameters) == (
            want.name,
            want.datatype,
            want.shape,
            want.parameters,
        )
        assert tensor.data.dtype == want.data.dtype and tensor.data.shape == want.data.shape
        assert tensor.data.tobytes() == want.data.tobytes()


@pytest.mark.parametrize("datatype", ["INT32", "FP32", "FP16", "BOOL", "UINT64", "INT8"])
def test_a_repeated_call_is_what_the_full_decoder_makes(datatype: str) -> None:
    first = _message(datatype, values=1)
    first.parameters["priority"].int64_param = 2
    first.outputs.add(name="OUTPUT0")
    templates = _learned(first)
    again = _message(datatype, values=3)
    again.parameters["priority"].int64_param = 2
    again.outputs.add(name="OUTPUT0")
    data = again.SerializeToString()
    template = templates.match(data)
    assert template is not None and template.model_name == "m"
    _same(template.request(data), _full_decode(data))


def test_a_large_repeated_call_views_the_received_bytes() -> None:
    shape = (1, WALK_FROM_BYTES // 4)
    templates = _learned(_message("FP32", shape))
    data = _message("FP32", shape, values=7).SerializeToString()
    template = templates.match(data)
    assert template is not None
    made = template.request(data)
    _same(made, _full_decode(data))
    assert made.inputs[0].data.base is data or made.inputs[0].data.base.base is data


def _rebuilt(templates: RequestTemplates, data: bytes) -> InferenceRequest:
    template = templates.match(data)
    assert template is not None
    return template.request(data)


def test_requests_of_one_template_share_its_layout_and_only_they_do() -> None:
    templates = _learned(_message())
    templates.learn(
        read_infer_request(_message("FP32").SerializeToString()),
        _full_decode(_message("FP32").SerializeToString()),
    )
    ints, floats = _message(values=5).SerializeToString(), _message("FP32", values=5).SerializeToString()
    made = [_rebuilt(templates, data) for data in (ints, ints, floats)]
    assert made[0].layout is not None and made[0].layout is made[1].layout
    assert made[2].layout is not None and made[2].layout is not made[0].layout
    assert _full_decode(ints).layout is None  # decoded in full: checked in full


def _variants() -> dict[str, pb.ModelInferRequest]:
    other_name = _message()
    other_name.inputs[1].name = "INPUTX"  # same length
    narrower = _message("INT16", shape=(1, 8))  # same payload size, same text lengths
    reshaped = _message(shape=(2, 2))  # same payload size, same varint lengths
    with_parameter = _message()
    with_parameter.parameters["priority"].int64_param = 1
    with_output = _message()
    with_output.outputs.add(name="OUTPUT0")
    renamed = _message()
    renamed.model_name = "n"
    return {
        "model": renamed,
        "input name": other_name,
        "datatype": narrower,
        "shape": reshaped,
        "parameter": with_parameter,
        "requested output": with_output,
        "version": _message(model_version="1"),
    }


@pytest.mark.parametrize("differs_in", list(_variants()))
def test_a_call_that_differs_in_anything_but_tensor_bytes_does_not_match(differs_in: str) -> None:
    templates = _learned(_message())
    assert templates.match(_message(values=5).SerializeToString()) is not None
    assert templates.match(_variants()[differs_in].SerializeToString()) is None


def _shared_memory_input() -> pb.ModelInferRequest:
    message = pb.ModelInferRequest(model_name="m")
    message.inputs.add(name="INPUT0", datatype="INT32", shape=[4])
    message.inputs.add(name="INPUT1", datatype="INT32", shape=[4])
    message.inputs[1].parameters["binary_data_size"].int64_param = 16  # any parameter on an input
    message.raw_input_contents.extend([bytes(16), bytes(16)])
    return message


def _bytes_input() -> pb.ModelInferRequest:
    message = pb.ModelInferRequest(model_name="m")
    message.inputs.add(name="TEXT", datatype="BYTES", shape=[1])
    message.raw_input_contents.append(b"\x02\x00\x00\x00hi")
    return message


def _output_parameter() -> pb.ModelInferRequest:
    message = _message()
    message.outputs.add(name="OUTPUT0").parameters["classification"].int64_param = 2
    return message


def _large_metadata() -> pb.ModelInferRequest:
    message = _message()
    message.parameters["note"].string_param = "x" * MAX_PREFIX_BYTES
    return message


def _field_after_raw() -> bytes:
    message = _message()
    return message.SerializeToString() + pb.ModelInferRequest(id="late").SerializeToString()


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(_message(id="call-1").SerializeToString(), id="an id"),
        pytest.param(_shared_memory_input().SerializeToString(), id="input parameters"),
        pytest.param(_bytes_input().SerializeToString(), id="BYTES"),
        pytest.param(_output_parameter().SerializeToString(), id="output parameters"),
        pytest.param(_field_after_raw(), id="a field after the raw entries"),
        pytest.param(_large_metadata().SerializeToString(), id="metadata over the bound"),
    ],
)
def test_calls_with_nothing_to_share_make_no_template(data: bytes) -> None:
    templates = RequestTemplates()
    call = read_infer_request(data)
    templates.learn(call, decode_request(call.message, LIMITS, None, call.raw))
    assert templates.match(data) is None


def test_typed_contents_make_no_template() -> None:
    message = pb.ModelInferRequest(model_name="m")
    message.inputs.add(name="INPUT0", datatype="INT32", shape=[2]).contents.int_contents.extend([1, 2])
    data = message.SerializeToString()
    templates = RequestTemplates()
    call = read_infer_request(data)
    templates.learn(call, decode_request(call.message, LIMITS, None, call.raw))
    assert templates.match(data) is None


def test_the_store_starts_over_when_full() -> None:
    templates = RequestTemplates(capacity=3)
    layouts = [_message(shape=(1, size)) for size in (1, 2, 3, 4)]
    for message in layouts:
        call = read_infer_request(message.SerializeToString())
        templates.learn(call, decode_request(call.message, LIMITS, None, call.raw))
    assert templates.match(layouts[0].SerializeToString()) is None
    assert templates.match(layouts[3].SerializeToString()) is not None


def _response(**fields: object) -> InferenceResponse:
    outputs = [
        Tensor.from_array("OUTPUT0", np.arange(4, dtype=np.int32)),
        Tensor.from_array("OUTPUT1", np.ones((2, 2), dtype=np.float32)),
    ]
    return InferenceResponse(**{"model_name": "m", "model_version": "1", "outputs": outputs, **fields})


@pytest.mark.parametrize(
    "response",
    [
        pytest.param(_response(), id="plain"),
        pytest.param(_response(id="call-1"), id="an id"),
        pytest.param(_response(parameters={"sequence_end": True}), id="parameters"),
    ],
)
def test_a_reply_from_a_head_is_the_reply_protobuf_writes(response: InferenceResponse) -> None:
    heads = ReplyHeads(response_metadata)
    for _ in range(2):  # made, then reused
        written = pb.ModelInferResponse.FromString(encode_response_bytes(response, heads))
        assert written == pb.ModelInferResponse.FromString(encode_response_bytes(response))


def test_a_head_is_made_once_per_distinct_metadata() -> None:
    heads = ReplyHeads(response_metadata)
    assert heads.head(_response()) is heads.head(_response())
    other = _response()
    other.outputs[1] = Tensor.from_array("OUTPUT1", np.ones((4,), dtype=np.float32))
    assert pb.ModelInferResponse.FromString(heads.head(other)).outputs[1].shape == [4]


def test_a_shape_given_as_a_list_is_written_without_a_head() -> None:
    response = _response()
    response.outputs[0].shape = [4]  # type: ignore[assignment]  # a backend's list: not hashable
    heads = ReplyHeads(response_metadata)
    assert pb.ModelInferResponse.FromString(heads.head(response)).outputs[0].shape == [4]


# ---------------------------------------------------------------- on a real server


@pytest.fixture(scope="module")
def stub(server):
    with grpc.insecure_channel(server.grpc_url) as channel:
        yield pb_grpc.GRPCInferenceServiceStub(channel)


def _simple(
    first: np.ndarray, second: np.ndarray, datatype: str = "INT32", **fields: str
) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="simple", **fields)
    for name, values in (("INPUT0", first), ("INPUT1", second)):
        request.inputs.add(name=name, datatype=datatype, shape=values.shape)
        request.raw_input_contents.append(values.astype("<i4").tobytes())
    return request


def _sums(reply: pb.ModelInferResponse) -> list[int]:
    return np.frombuffer(reply.raw_output_contents[0], "<i4").tolist()


def test_repeated_calls_answer_each_call_s_own_values(stub) -> None:
    for step in range(12):
        first = np.arange(16, dtype=np.int32).reshape(1, 16) * step
        reply = stub.ModelInfer(_simple(first, np.full((1, 16), step, np.int32)), timeout=10)
        assert _sums(reply) == (first[0] + step).tolist()
        assert reply.model_name == "simple" and reply.id == ""
    batch = np.arange(32, dtype=np.int32).reshape(2, 16)
    assert _sums(stub.ModelInfer(_simple(batch, batch), timeout=10)) == (batch * 2).ravel().tolist()


def test_a_call_that_only_looks_like_a_repeated_one_is_checked(stub) -> None:
    ones = np.ones((1, 16), np.int32)
    stub.ModelInfer(_simple(ones, ones), timeout=10)  # the layout is known now
    for request in (_simple(ones, ones, datatype="INT16"), _simple(ones.reshape(2, 8), ones.reshape(2, 8))):
        with pytest.raises(grpc.RpcError) as refused:
            stub.ModelInfer(request, timeout=10)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert _sums(stub.ModelInfer(_simple(ones, ones), timeout=10)) == [2] * 16


def test_a_call_with_an_id_gets_its_id_back(stub) -> None:
    ones = np.ones((1, 16), np.int32)
    for call_id in ("a-1", "a-2"):
        assert stub.ModelInfer(_simple(ones, ones, id=call_id), timeout=10).id == call_id


def test_a_repeated_calls_misaligned_small_input_reaches_the_model_aligned() -> None:
    message = _message("INT32")
    data = message.SerializeToString()
    offsets = [data.find(raw) for raw in message.raw_input_contents]
    assert any(offset % 4 for offset in offsets)  # the frame puts one at an odd offset
    templates = _learned(message)
    again = _message("INT32", values=5)
    made = _rebuilt(templates, again.SerializeToString())
    assert all(t.data.flags.aligned and not t.data.flags.writeable for t in made.inputs)
    decoded = _full_decode(again.SerializeToString())
    _same(made, decoded)
    assert all(t.data.flags.aligned for t in decoded.inputs)
