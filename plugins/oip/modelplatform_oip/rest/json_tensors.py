"""JSON tensor data <-> numpy, with Triton's strictness.

Integers must be JSON integers within range, booleans JSON booleans, BYTES
JSON strings; nested data must be rectangular. The element count is checked
against the declared shape and the limit before any array is built.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from modelplatform import InvalidArgument, LimitExceeded, Limits
from modelplatform.datatypes import element_count, numpy_dtype


def array_from_json(name: str, datatype: str, shape: list[int], data: Any, limits: Limits) -> np.ndarray:
    """The input's data as an array of ``shape``; raises InvalidArgument on any mismatch."""
    count = element_count(shape, limits.max_tensor_elements, name)
    if not isinstance(data, list):
        data = [data]
    if datatype == "BYTES":
        array = _bytes_array(name, data, limits)
    elif datatype == "BF16":
        raise InvalidArgument(f"input '{name}': BF16 data must be sent binary, not as JSON")
    else:
        array = _numeric_array(name, datatype, data)
    if array.size != count:
        raise InvalidArgument(f"input '{name}': shape {shape} needs {count} elements, data has {array.size}")
    return array.reshape(shape)


def _numeric_array(name: str, datatype: str, data: list[Any]) -> np.ndarray:
    target = numpy_dtype(datatype)
    try:
        parsed = np.array(data)
    except ValueError:
        raise InvalidArgument(f"input '{name}': data is not a rectangular list") from None
    kind = parsed.dtype.kind
    if parsed.size == 0:
        return parsed.astype(target)
    if datatype == "BOOL":
        if kind != "b":
            raise InvalidArgument(f"input '{name}': BOOL data must be true/false")
        return parsed
    if kind not in "biuf" or kind == "b":
        raise InvalidArgument(f"input '{name}': {datatype} data must be JSON numbers")
    if target.kind in "iu":
        return _integers(name, datatype, parsed, target)
    return parsed.astype(target)


def _integers(name: str, datatype: str, parsed: np.ndarray, target: np.dtype) -> np.ndarray:
    if parsed.dtype.kind == "f":
        raise InvalidArgument(f"input '{name}': {datatype} data must be JSON integers")
    info = _limits(target)
    if parsed.min() < info.min or parsed.max() > info.max:
        raise InvalidArgument(f"input '{name}': a value is out of range for {datatype}")
    return parsed.astype(target)


@functools.cache
def _limits(target: np.dtype) -> np.iinfo:
    """np.iinfo costs microseconds to build; there are eight integer dtypes."""
    return np.iinfo(target)


def _bytes_array(name: str, data: list[Any], limits: Limits) -> np.ndarray:
    flat = _flatten(name, data)
    out = np.empty(len(flat), dtype=object)
    for index, item in enumerate(flat):
        if not isinstance(item, str):
            raise InvalidArgument(f"input '{name}': BYTES data must be JSON strings")
        encoded = item.encode()
        if len(encoded) > limits.max_bytes_element:
            raise LimitExceeded(
                f"input '{name}' BYTES element length", len(encoded), limits.max_bytes_element
            )
        out[index] = encoded
    return out


def _flatten(name: str, data: list[Any]) -> list[Any]:
    """Row-major flattening that refuses ragged nesting."""
    flat: list[Any] = []
    level = data
    while level and isinstance(level[0], list):
        width = len(level[0])
        if any(not isinstance(row, list) or len(row) != width for row in level):
            raise InvalidArgument(f"input '{name}': data is not a rectangular list")
        level = [item for row in level for item in row]
    flat.extend(level)
    if any(isinstance(item, list) for item in flat):
        raise InvalidArgument(f"input '{name}': data is not a rectangular list")
    return flat


def array_to_json(array: np.ndarray) -> list[Any]:
    """Flat, row-major JSON data for an output (BYTES as UTF-8 text)."""
    if array.dtype == object or array.dtype.kind in "SU":
        return [_text(item) for item in array.reshape(-1)]
    return array.reshape(-1).tolist()


def _text(item: Any) -> str:
    if isinstance(item, str):
        return item
    try:
        return bytes(item).decode()
    except UnicodeDecodeError:
        raise InvalidArgument(
            "an output holds bytes that are not UTF-8; request it with binary_data"
        ) from None
