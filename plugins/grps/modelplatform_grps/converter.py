"""The one converter between grps payloads and the core's request/response.

Shared by HTTP and gRPC (docs/protocols/grps.md has the mapping table):

- ``gtensors``: named tensors, ``DT_*`` <-> datatypes, data in the ``flat_*``
  field of the dtype;
- ``ndarray`` (HTTP JSON only): one FP32 tensor for a single-FP32-input model;
- ``str_data`` / ``bin_data``: one BYTES element for a single BYTES input;
- ``gmap``: entries feed named inputs as one-element tensors.

Responses answer in ``str_data`` / ``bin_data`` when the request used that
field and the model has a single one-element BYTES output, else ``gtensors``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from modelplatform import (
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    LimitExceeded,
    Limits,
    ModelConfig,
    Tensor,
    TensorSpec,
)
from modelplatform.datatypes import element_count, numpy_dtype

from .protos.grps_pb2 import DataType, GenericMapData, GenericTensor, GrpsMessage

DT_TO_DATATYPE: dict[DataType, str] = {
    DataType.DT_UINT8: "UINT8",
    DataType.DT_INT8: "INT8",
    DataType.DT_INT16: "INT16",
    DataType.DT_INT32: "INT32",
    DataType.DT_INT64: "INT64",
    DataType.DT_FLOAT16: "FP16",
    DataType.DT_FLOAT32: "FP32",
    DataType.DT_FLOAT64: "FP64",
    DataType.DT_STRING: "BYTES",
}
#: Output datatypes grps has no DT for travel in the nearest lossless one.
DATATYPE_TO_DT: dict[str, DataType] = {
    **{datatype: dt for dt, datatype in DT_TO_DATATYPE.items()},
    "BOOL": DataType.DT_UINT8,
    "UINT16": DataType.DT_INT32,
    "UINT32": DataType.DT_INT64,
}
FLAT_FIELD: dict[int, str] = {
    DataType.DT_UINT8: "flat_uint8",
    DataType.DT_INT8: "flat_int8",
    DataType.DT_INT16: "flat_int16",
    DataType.DT_INT32: "flat_int32",
    DataType.DT_INT64: "flat_int64",
    DataType.DT_FLOAT16: "flat_float16",
    DataType.DT_FLOAT32: "flat_float32",
    DataType.DT_FLOAT64: "flat_float64",
    DataType.DT_STRING: "flat_string",
}
#: numpy type each flat_* field is filled from (fp16 travels as float).
FLAT_NUMPY: dict[int, Any] = {
    DataType.DT_UINT8: np.uint32,
    DataType.DT_INT8: np.int32,
    DataType.DT_INT16: np.int32,
    DataType.DT_INT32: np.int32,
    DataType.DT_INT64: np.int64,
    DataType.DT_FLOAT16: np.float32,
    DataType.DT_FLOAT32: np.float32,
    DataType.DT_FLOAT64: np.float64,
}
GMAP_DATATYPE = {
    "s_s": "BYTES",
    "s_b": "BYTES",
    "s_i32": "INT32",
    "s_i64": "INT64",
    "s_f": "FP32",
    "s_d": "FP64",
}


@dataclass(frozen=True, slots=True)
class Payload:
    """The request's data: ``kind`` is the oneof field name, ``value`` its content."""

    kind: str
    value: Any

    @classmethod
    def of(cls, message: GrpsMessage) -> Payload:
        kind = message.WhichOneof("data_oneof")
        if kind is None:
            raise InvalidArgument("No legal field in the message: set str_data, bin_data, gtensors or gmap")
        if kind == "ndarray":
            raise InvalidArgument("ndarray is an HTTP JSON convenience only; send gtensors")
        return cls(kind, getattr(message, kind))


# ---- request ----


def to_request(
    payload: Payload, name: str, version: str, config: ModelConfig, limits: Limits
) -> InferenceRequest:
    if payload.kind == "gtensors":
        inputs = [_from_generic(t, i, config, limits) for i, t in enumerate(payload.value.tensors)]
    elif payload.kind == "gmap":
        inputs = _from_map(payload.value, config)
    elif payload.kind == "ndarray":
        inputs = [_from_ndarray(payload.value, config, limits)]
    else:
        inputs = [_from_single_bytes(payload.kind, payload.value, config, limits)]
    return InferenceRequest(name, inputs, version)


def _from_generic(tensor: GenericTensor, index: int, config: ModelConfig, limits: Limits) -> Tensor:
    name = tensor.name or _positional_name(config, index)
    datatype = DT_TO_DATATYPE.get(tensor.dtype)
    if datatype is None:
        raise InvalidArgument(f"tensor '{name}': dtype {tensor.dtype} is not a supported DT_* value")
    field = FLAT_FIELD[tensor.dtype]
    values = getattr(tensor, field)
    shape = tuple(tensor.shape) if len(tensor.shape) else (len(values),)
    count = element_count(shape, limits.max_tensor_elements)
    if len(values) != count:
        raise InvalidArgument(
            f"tensor '{name}': shape {list(shape)} needs {count} values in {field}, got {len(values)}"
        )
    if datatype == "BYTES":
        data = _bytes_array(name, values, limits)
    else:
        data = _numeric(name, values, tensor.dtype, datatype)
    return Tensor(name, datatype, shape, data.reshape(shape))


def _positional_name(config: ModelConfig, index: int) -> str:
    if index < len(config.inputs):
        return config.inputs[index].name
    raise InvalidArgument(f"unnamed tensor #{index}: model '{config.name}' has {len(config.inputs)} inputs")


def _numeric(name: str, values: Any, dt: int, datatype: str) -> np.ndarray:
    wire = np.array(values, dtype=FLAT_NUMPY[dt])
    target = numpy_dtype(datatype)
    cast = wire.astype(target)
    if wire.dtype.kind in "iu" and not np.array_equal(cast, wire):
        raise InvalidArgument(f"tensor '{name}': a value is out of range for {datatype}")
    return cast


def _bytes_array(name: str, values: Any, limits: Limits) -> np.ndarray:
    data = np.empty(len(values), dtype=object)
    for i, text in enumerate(values):
        encoded = text.encode("utf-8")
        if len(encoded) > limits.max_bytes_element:
            raise LimitExceeded(
                f"tensor '{name}' element {i} size in bytes", len(encoded), limits.max_bytes_element
            )
        data[i] = encoded
    return data


def _single_input(config: ModelConfig, kind: str, datatype: str) -> TensorSpec:
    if len(config.inputs) != 1 or config.inputs[0].datatype != datatype:
        raise InvalidArgument(
            f"{kind} feeds a model with a single {datatype} input; model '{config.name}' "
            f"takes {[f'{s.name}:{s.datatype}' for s in config.inputs]} (send gtensors)"
        )
    return config.inputs[0]


def _one_element_shape(spec: TensorSpec, config: ModelConfig, kind: str) -> tuple[int, ...]:
    shape = tuple(1 if d == -1 else d for d in spec.full_shape(config.max_batch_size))
    if int(np.prod(shape)) != 1:
        raise InvalidArgument(
            f"{kind} gives one element but model '{config.name}' input '{spec.name}' "
            f"takes shape {spec.full_shape(config.max_batch_size)} (send gtensors)"
        )
    return shape


def _from_single_bytes(kind: str, value: Any, config: ModelConfig, limits: Limits) -> Tensor:
    spec = _single_input(config, kind, "BYTES")
    shape = _one_element_shape(spec, config, kind)
    element = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    if len(element) > limits.max_bytes_element:
        raise LimitExceeded(f"{kind} size in bytes", len(element), limits.max_bytes_element)
    data = np.empty(1, dtype=object)
    data[0] = element
    return Tensor(spec.name, "BYTES", shape, data.reshape(shape))


def _from_ndarray(value: Any, config: ModelConfig, limits: Limits) -> Tensor:
    spec = _single_input(config, "ndarray", "FP32")
    try:
        data = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as error:
        raise InvalidArgument(f"ndarray must be a rectangular nested list of numbers: {error}") from None
    element_count(data.shape, limits.max_tensor_elements)
    return Tensor(spec.name, "FP32", tuple(data.shape), data)


def _from_map(gmap: GenericMapData, config: ModelConfig) -> list[Tensor]:
    tensors: list[Tensor] = []
    for field, datatype in GMAP_DATATYPE.items():
        for key, value in getattr(gmap, field).items():
            tensors.append(_map_entry(key, value, datatype, config))
    if not tensors:
        raise InvalidArgument("gmap has no entries")
    return tensors


def _map_entry(key: str, value: Any, datatype: str, config: ModelConfig) -> Tensor:
    spec = config.input_spec(key)
    shape = _one_element_shape(spec, config, "gmap") if spec is not None else (1,)
    if datatype == "BYTES":
        data = np.empty(1, dtype=object)
        data[0] = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    else:
        if spec is not None and spec.datatype not in ("BYTES", "BOOL", "BF16"):
            datatype = spec.datatype  # a number feeds any numeric input (s_i32 -> INT64, ...)
        data = _map_number(key, value, datatype)
    return Tensor(key, datatype, shape, data.reshape(shape))


def _map_number(key: str, value: float | int, datatype: str) -> np.ndarray:
    """A gmap number as ``datatype``, refused when it would be truncated or wrap around."""
    target = numpy_dtype(datatype)
    if target.kind in "iu":
        info = np.iinfo(target)
        whole = isinstance(value, int) or float(value).is_integer()  # NaN/inf are not
        if not whole or not info.min <= int(value) <= info.max:
            raise InvalidArgument(f"gmap '{key}': {value!r} is not a whole number that fits {datatype}")
        return np.asarray([int(value)], dtype=target)
    return np.asarray([value], dtype=target)


# ---- response ----


def to_message(response: InferenceResponse, answer: str) -> GrpsMessage:
    """The response as a GrpsMessage, answering in the request's field where it can."""
    message = GrpsMessage()
    single = _single_bytes(response) if answer in ("str_data", "bin_data") else None
    if single is not None and answer == "bin_data":
        message.bin_data = single
    elif single is not None:
        message.str_data = single.decode("utf-8", errors="replace")
    else:
        message.gtensors.tensors.extend(to_generic(t) for t in response.outputs)
    return message


def single_bytes_of(response: InferenceResponse) -> bytes | None:
    """The only output's only element, when the model answers one BYTES value."""
    return _single_bytes(response)


def _single_bytes(response: InferenceResponse) -> bytes | None:
    if len(response.outputs) != 1:
        return None
    tensor = response.outputs[0]
    if tensor.datatype != "BYTES" or tensor.data.size != 1:
        return None
    return bytes(tensor.data.reshape(-1)[0])


def to_generic(tensor: Tensor) -> GenericTensor:
    dt = DATATYPE_TO_DT.get(tensor.datatype)
    if dt is None:
        raise InvalidArgument(f"output '{tensor.name}': datatype {tensor.datatype} has no grps DT_* type")
    generic = GenericTensor(name=tensor.name, dtype=dt, shape=list(tensor.shape))
    flat = tensor.data.reshape(-1)
    if dt == DataType.DT_STRING:
        generic.flat_string.extend(bytes(b).decode("utf-8", errors="replace") for b in flat)
    else:
        getattr(generic, FLAT_FIELD[dt]).extend(flat.astype(FLAT_NUMPY[dt]).tolist())
    return generic


def to_ndarray(response: InferenceResponse) -> Any:
    """``return-ndarray=true``: the first output as a nested list; it must be FP32."""
    if not response.outputs or response.outputs[0].datatype != "FP32":
        raise InvalidArgument("No float32 tensors in output. Cannot convert to ndarray.")
    return response.outputs[0].data.tolist()
