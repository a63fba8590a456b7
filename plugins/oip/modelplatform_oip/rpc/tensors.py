"""ModelInferRequest/Response <-> InferenceRequest/Response.

Inputs come in ``raw_input_contents`` (what tritonclient always sends; decoded
with ``np.frombuffer``, no copy), in typed ``contents``, or in a shared-memory
region their parameters name (then they have no raw entry: the raw entries
belong, in order, to the other inputs). Outputs always go back raw; one
written into a region has an empty raw entry, as Triton answers. Every
client-sent size is checked before anything is allocated.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from modelplatform import (
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    Limits,
    RequestedOutput,
    Tensor,
)
from modelplatform.datatypes import DATATYPES, element_count, numpy_dtype

from ..protos import grpc_service_pb2 as pb
from ..raw import LITTLE_ENDIAN, SHARE_FROM_BYTES, raw_array, raw_bytes, raw_view
from ..regions import REGION, RegionReader, in_region
from . import parameters
from .repeats import ReplyHeads
from .wire import write_infer_response

#: Typed contents field for each datatype (FP16/BF16 have none: raw only).
TYPED_FIELD: dict[str, str] = {
    "BOOL": "bool_contents",
    "INT8": "int_contents",
    "INT16": "int_contents",
    "INT32": "int_contents",
    "INT64": "int64_contents",
    "UINT8": "uint_contents",
    "UINT16": "uint_contents",
    "UINT32": "uint_contents",
    "UINT64": "uint64_contents",
    "FP32": "fp32_contents",
    "FP64": "fp64_contents",
    "BYTES": "bytes_contents",
}


def decode_request(
    message: pb.ModelInferRequest,
    limits: Limits,
    read_region: RegionReader | None = None,
    raw: Sequence[bytes | memoryview] | None = None,
) -> InferenceRequest:
    """The request as the core's; a decoding error names the model and the input.

    ``read_region`` resolves inputs in shared-memory regions; ``raw``: the raw
    inputs when they were kept out of ``message`` (wire.py), by default the
    message's own ``raw_input_contents``.
    """
    try:
        return _decode(message, limits, read_region, message.raw_input_contents if raw is None else raw)
    except InvalidArgument as error:
        raise error.naming_model(message.model_name) from None


def _decode(
    message: pb.ModelInferRequest,
    limits: Limits,
    read_region: RegionReader | None,
    raw: Sequence[bytes | memoryview],
) -> InferenceRequest:
    items = list(message.inputs)  # protobuf builds a wrapper per access: read them once
    shared = [REGION in item.parameters for item in items]
    in_memory = len(shared) - sum(shared)
    if raw and len(raw) != in_memory:
        raise InvalidArgument(
            f"raw_input_contents has {len(raw)} entries for {in_memory} inputs"
            + (" not in shared memory" if in_memory != len(shared) else "")
        )
    if raw and in_memory == len(items):  # the common case: every input in raw_input_contents
        inputs = [_input(item, contents, limits) for item, contents in zip(items, raw)]
    else:
        entries = iter(raw)
        inputs = [
            _region_input(item, limits, read_region)
            if shared[i]
            else _input(item, next(entries) if raw else None, limits)
            for i, item in enumerate(items)
        ]
    requested = message.outputs
    outputs = (
        [RequestedOutput(o.name, parameters.from_proto(o.parameters)) for o in requested] if requested else []
    )
    return InferenceRequest(
        model_name=message.model_name,
        model_version=message.model_version,
        id=message.id,
        parameters=parameters.request_from_proto(message.parameters),
        inputs=inputs,
        outputs=outputs or None,
    )


def _input(
    item: pb.ModelInferRequest.InferInputTensor, raw: bytes | memoryview | None, limits: Limits
) -> Tensor:
    name, datatype, shape = item.name, item.datatype, list(item.shape)
    if datatype not in DATATYPES:
        raise InvalidArgument(f"input '{name}': unknown datatype '{datatype}'")
    if raw is not None and item.HasField("contents"):
        raise InvalidArgument(f"input '{name}': contents and raw_input_contents are both set")
    count = element_count(shape, limits.max_tensor_elements, name)
    if raw is not None:
        array = raw_array(name, datatype, count, raw, limits)
    else:
        array = _typed_array(name, datatype, count, item.contents)
    return Tensor(name, datatype, tuple(shape), array.reshape(shape), parameters.from_proto(item.parameters))


def _region_input(
    item: pb.ModelInferRequest.InferInputTensor, limits: Limits, read_region: RegionReader | None
) -> Tensor:
    name, datatype, shape = item.name, item.datatype, list(item.shape)
    if datatype not in DATATYPES:
        raise InvalidArgument(f"input '{name}': unknown datatype '{datatype}'")
    if item.HasField("contents"):
        raise InvalidArgument(f"input '{name}': contents and '{REGION}' are both set")
    if read_region is None:
        raise InvalidArgument(f"input '{name}': shared memory regions are not served here")
    params = parameters.from_proto(item.parameters)
    array = read_region(name, datatype, shape, params, limits)
    return Tensor(name, datatype, tuple(shape), array.reshape(shape), params)


def _typed_array(name: str, datatype: str, count: int, contents: pb.InferTensorContents) -> np.ndarray:
    field = TYPED_FIELD.get(datatype)
    if field is None:
        raise InvalidArgument(f"input '{name}': {datatype} data must be sent in raw_input_contents")
    values = getattr(contents, field)
    if len(values) != count:
        raise InvalidArgument(f"input '{name}': expected {count} values in {field}, got {len(values)}")
    if datatype == "BYTES":
        array = np.empty(count, dtype=object)
        array[:] = list(values)
        return array
    try:
        return np.array(values, dtype=numpy_dtype(datatype))
    except (OverflowError, ValueError):
        raise InvalidArgument(f"input '{name}': a value is out of range for {datatype}") from None


def encode_response(response: InferenceResponse) -> pb.ModelInferResponse:
    """The response as a message (what a stream embeds); an output written into a
    shared-memory region has an empty entry, as Triton sends it."""
    message = response_metadata(response)
    message.raw_output_contents.extend(b"" if in_region(t) else raw_bytes(t) for t in response.outputs)
    return message


def encode_response_bytes(response: InferenceResponse, heads: ReplyHeads | None = None) -> bytes:
    """The serialised response, each output's bytes copied once (wire.py); its metadata
    from ``heads`` when given (made once per distinct one, repeats.py)."""
    raw: list[bytes | memoryview] = []
    for tensor in response.outputs:  # no comprehension, in_region and raw_view's commonest case
        data = tensor.data  # spelled out: every frame here costs the loop (performance.md)
        if REGION in tensor.parameters:
            raw.append(b"")
        elif (
            tensor.datatype != "BYTES"
            and data.nbytes < SHARE_FROM_BYTES
            and data.dtype == LITTLE_ENDIAN[tensor.datatype]
        ):
            raw.append(data.tobytes())  # small and in its raw form already: raw_view's copy
        else:
            raw.append(raw_view(tensor))
    head = response_metadata(response).SerializeToString() if heads is None else heads.head(response)
    return write_infer_response(head, raw)


def response_metadata(response: InferenceResponse) -> pb.ModelInferResponse:
    message = pb.ModelInferResponse(
        model_name=response.model_name, model_version=response.model_version, id=response.id
    )
    parameters.to_proto(response.parameters, message.parameters)
    for tensor in response.outputs:
        message.outputs.add(name=tensor.name, datatype=tensor.datatype, shape=tensor.shape)
    return message
