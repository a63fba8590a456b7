"""``tensorflow.TensorProto`` <-> numpy.

``tensor_content`` (what TensorFlow's ``make_tensor_proto`` sends) becomes a
zero-copy ``np.frombuffer`` view (a small misaligned one is copied aligned:
``datatypes.aligned``); typed fields (``float_val``...) are read
with TensorFlow's rule that a short list repeats its last value to fill the
shape. Answers use ``tensor_content`` for fixed-size types and
``string_val`` for strings.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from modelplatform import InvalidArgument, LimitExceeded, Unsupported
from modelplatform.datatypes import element_count, from_buffer, numpy_dtype

from ..limits import Limits
from ..protos import tensorflow_pb2 as tf

#: DataType -> (platform datatype, typed field).
FROM_DT: dict[tf.DataType, tuple[str, str]] = {
    tf.DT_FLOAT: ("FP32", "float_val"),
    tf.DT_DOUBLE: ("FP64", "double_val"),
    tf.DT_INT32: ("INT32", "int_val"),
    tf.DT_INT16: ("INT16", "int_val"),
    tf.DT_INT8: ("INT8", "int_val"),
    tf.DT_UINT8: ("UINT8", "int_val"),
    tf.DT_UINT16: ("UINT16", "int_val"),
    tf.DT_INT64: ("INT64", "int64_val"),
    tf.DT_UINT32: ("UINT32", "uint32_val"),
    tf.DT_UINT64: ("UINT64", "uint64_val"),
    tf.DT_BOOL: ("BOOL", "bool_val"),
    tf.DT_HALF: ("FP16", "half_val"),
    tf.DT_BFLOAT16: ("BF16", "half_val"),
    tf.DT_STRING: ("BYTES", "string_val"),
}
TO_DT: dict[str, tf.DataType] = {datatype: dt for dt, (datatype, _) in FROM_DT.items()}


def to_array(proto: Any, limits: Limits, alias: str = "") -> tuple[str, np.ndarray]:
    """The platform datatype and array of a TensorProto (``alias`` names it in errors)."""
    if proto.dtype not in FROM_DT:
        raise _dtype_error(proto.dtype, alias)
    datatype, field = FROM_DT[proto.dtype]
    if proto.tensor_shape.unknown_rank:
        raise InvalidArgument("tensor_shape has unknown rank")
    shape = [d.size for d in proto.tensor_shape.dim]
    count = element_count(shape, limits.max_tensor_elements)
    if proto.tensor_content:
        if datatype == "BYTES":
            raise InvalidArgument("DT_STRING tensors must use string_val, not tensor_content")
        return datatype, from_buffer(proto.tensor_content, datatype, count).reshape(shape)
    values = getattr(proto, field)
    if datatype == "BYTES":
        return datatype, _strings(values, count, limits).reshape(shape)
    try:
        return datatype, _typed(values, datatype, count).reshape(shape)
    except OverflowError:  # int_val carries INT8/INT16/UINT8/UINT16 as int32: refuse, never wrap
        raise InvalidArgument(
            f"tensor '{alias}': a value of {field} is out of range for {datatype}"
        ) from None


def _dtype_error(dtype: int, alias: str) -> InvalidArgument | Unsupported:
    """DT_INVALID or a number no DataType has: TensorFlow cannot parse the tensor (INVALID_ARGUMENT,
    TF Serving's words); a real TensorFlow type we do not serve is UNIMPLEMENTED."""
    if dtype == tf.DT_INVALID or dtype not in tf.DataType.values():
        return InvalidArgument(f"tensor parsing error: {alias}")
    return Unsupported(f"tensor dtype {tf.DataType.Name(dtype)} is not supported")


def _typed(values: Any, datatype: str, count: int) -> np.ndarray:
    if datatype in ("FP16", "BF16"):
        array = np.asarray(values, dtype=np.int32).astype(np.uint16)
        array = array.view(np.float16) if datatype == "FP16" else array
    else:
        array = np.asarray(values, dtype=numpy_dtype(datatype))
    return _filled(array, count)


def _filled(array: np.ndarray, count: int) -> np.ndarray:
    if array.size == count:
        return array
    if array.size > count:
        raise InvalidArgument(f"tensor has {array.size} values, more than its shape's {count}")
    if array.size == 0:
        return np.zeros(count, dtype=array.dtype)
    return np.concatenate([array, np.full(count - array.size, array[-1], dtype=array.dtype)])


def _strings(values: Any, count: int, limits: Limits) -> np.ndarray:
    items = list(values)
    for item in items:
        if len(item) > limits.max_bytes_element:
            raise LimitExceeded("string element length", len(item), limits.max_bytes_element)
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return _filled(out, count) if items else np.full(count, b"", dtype=object)


def from_array(array: np.ndarray, datatype: str) -> Any:
    """A TensorProto for an output array."""
    proto = tf.TensorProto(dtype=TO_DT[datatype])
    proto.tensor_shape.dim.extend(tf.TensorShapeProto.Dim(size=d) for d in array.shape)
    if datatype == "BYTES":
        proto.string_val.extend(
            item.encode() if isinstance(item, str) else bytes(item) for item in array.reshape(-1)
        )
    else:
        proto.tensor_content = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
    return proto
