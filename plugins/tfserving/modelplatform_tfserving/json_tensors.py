"""A JSON value -> a numpy array of a signature input's type (protocol-notes B5).

TF Serving's rules: floats take any JSON number; 8/16/32-bit integers and
uint8 take JSON integers (``1.0`` is refused); int64/uint32/uint64 their
ranges; bool only ``true``/``false``; strings a JSON string or a
``{"b64": ...}`` object; nesting must be rectangular. Types TF Serving cannot
read from JSON (half, bfloat16, uint16) answer UNIMPLEMENTED (501).
The fast path lets numpy flatten the nesting; only a bad value takes the
slow walk that finds it and words the error as TF Serving does.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from modelplatform import InvalidArgument, LimitExceeded
from modelplatform.datatypes import element_count, numpy_dtype

from .errors import quote, type_error, unimplemented_conversion
from .limits import MAX_RANK, Limits
from .tf_types import TYPE_STRINGS

_INT_RANGES: dict[str, tuple[int, int]] = {
    "INT8": (-(2**7), 2**7 - 1),
    "INT16": (-(2**15), 2**15 - 1),
    "INT32": (-(2**31), 2**31 - 1),
    "UINT8": (0, 2**8 - 1),
    "INT64": (-(2**63), 2**63 - 1),
    "UINT32": (0, 2**32 - 1),
    "UINT64": (0, 2**64 - 1),
}
_FLOATS = frozenset({"FP32", "FP64"})
_UNSUPPORTED = frozenset({"FP16", "BF16", "UINT16"})


def is_b64(value: Any) -> bool:
    """TF's base64 object: exactly one key, ``b64``, holding a string."""
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("b64"), str)


def is_named_object(value: Any) -> bool:
    return isinstance(value, dict) and not is_b64(value)


def dense_shape(value: Any) -> list[int]:
    """The shape the first elements imply (TF's ``GetDenseTensorShape``)."""
    shape: list[int] = []
    while isinstance(value, list):
        shape.append(len(value))
        if len(shape) > MAX_RANK:
            raise LimitExceeded("tensor rank", len(shape), MAX_RANK)
        if not value:
            break
        value = value[0]
    return shape


def array_from_json(value: Any, datatype: str, limits: Limits) -> np.ndarray:
    """The array for ``value``; raises TF Serving's errors on any mismatch."""
    shape = dense_shape(value)
    element_count(shape, limits.max_tensor_elements)
    flat = _flatten(value, shape)
    if flat is None:
        _walk(value, 0, shape, datatype, limits)
        raise InvalidArgument(f"JSON value is not a rectangular {shape} tensor")
    return _convert(flat, datatype, limits).reshape(shape)


def _flatten(value: Any, shape: list[int]) -> list[Any] | None:
    """Leaves in row-major order, or None when the nesting is not rectangular."""
    if not shape:
        return None if isinstance(value, list) else [value]
    if len(shape) == 1:  # the common small body: the list itself, when no leaf is a list
        return None if list in set(map(type, value)) else value
    try:
        nested = np.array(value, dtype=object)
    except ValueError:
        return None
    if list(nested.shape) != shape:
        return None
    flat = nested.ravel().tolist()
    return None if list in set(map(type, flat)) else flat


def _convert(flat: list[Any], datatype: str, limits: Limits) -> np.ndarray:
    if datatype in _UNSUPPORTED:
        if flat:
            raise unimplemented_conversion(flat[0], TYPE_STRINGS[datatype])
        return np.empty(0, dtype=numpy_dtype(datatype))
    if datatype in _FLOATS:
        return _floats(flat, datatype)
    if datatype == "BOOL":
        _expect(flat, lambda v: v is True or v is False, datatype)
        return np.array(flat, dtype=np.bool_)
    if datatype == "BYTES":
        return _strings(flat, limits)
    return _integers(flat, datatype)


def _expect(flat: list[Any], ok: Callable[[Any], bool], datatype: str) -> None:
    for value in flat:
        if not ok(value):
            raise type_error(value, TYPE_STRINGS[datatype])


def _floats(flat: list[Any], datatype: str) -> np.ndarray:
    kinds = set(map(type, flat))
    if not kinds <= {int, float}:
        _expect(flat, lambda v: type(v) in (int, float), datatype)
    try:
        wide = np.array(flat, dtype=np.float64)
    except OverflowError:  # an integer past float64's range: TF reads it as infinite
        wide = np.array([_to_float(v) for v in flat], dtype=np.float64)
    with np.errstate(over="ignore"):
        return wide.astype(numpy_dtype(datatype))


def _to_float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.copysign(math.inf, value)


def _integers(flat: list[Any], datatype: str) -> np.ndarray:
    low, high = _INT_RANGES[datatype]
    if set(map(type, flat)) <= {int} and (not flat or (low <= min(flat) and max(flat) <= high)):
        return np.array(flat, dtype=numpy_dtype(datatype))
    _expect(flat, lambda v: type(v) is int and low <= v <= high, datatype)
    raise AssertionError("unreachable: a value failed the range check")


def _strings(flat: list[Any], limits: Limits) -> np.ndarray:
    out = np.empty(len(flat), dtype=object)
    for index, value in enumerate(flat):
        out[index] = _string(value, limits)
    return out


def _string(value: Any, limits: Limits) -> bytes:
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
    elif isinstance(value, dict):
        data = decode_b64(value)
    else:
        raise type_error(value, "string")
    if len(data) > limits.max_bytes_element:
        raise LimitExceeded("string element length", len(data), limits.max_bytes_element)
    return data


def decode_b64(value: Any) -> bytes:
    if not is_b64(value):
        raise InvalidArgument(f"JSON Value: {quote(value)} not formatted correctly for base64 data")
    try:
        return base64.b64decode(value["b64"], validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgument("Unable to base64 decode") from None


def _walk(value: Any, level: int, shape: list[int], datatype: str, limits: Limits) -> None:
    """TF's ``FillTensorProto``: raise the first structural or type error."""
    rank = len(shape)
    if not isinstance(value, list):
        if level != rank:
            raise InvalidArgument(
                f"JSON Value: {quote(value)} found at incorrect level: {level + 1} "
                f"in the JSON DOM. Expected at level: {rank}"
            )
        _convert([value], datatype, limits)
        return
    if level >= rank:
        raise InvalidArgument(f"Encountered list at unexpected level: {level} expected < {rank}")
    if len(value) != shape[level]:
        raise InvalidArgument(
            f"Encountered list at unexpected size: {len(value)} at level: {level} "
            f"expected size: {shape[level]}"
        )
    for item in value:
        _walk(item, level + 1, shape, datatype, limits)
