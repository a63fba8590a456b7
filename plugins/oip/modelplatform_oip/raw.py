"""Raw tensor bytes <-> numpy, shared by oip-grpc (raw contents) and the binary extension.

Raw form: little-endian, row-major, no padding; BOOL one byte per element;
BYTES each element as a 4-byte little-endian length followed by its bytes.
Fixed-size inputs become views over the caller's buffer (no copy).
"""

from __future__ import annotations

import numpy as np

from modelplatform import (
    InvalidArgument,
    Tensor,
    decode_bytes,
    encode_bytes,
    from_buffer,
    numpy_dtype,
)

from .rest.codec import Limits


def raw_array(
    name: str, datatype: str, count: int, raw: bytes | memoryview, limits: Limits
) -> np.ndarray:
    """A flat array of ``count`` elements over ``raw`` (a view for fixed-size types)."""
    try:
        if datatype != "BYTES":
            return from_buffer(raw, datatype, count)
        if count * 4 > len(raw):  # every element needs its 4-byte length: refuse before allocating
            raise InvalidArgument(f"{len(raw)} bytes cannot hold {count} BYTES elements")
        return decode_bytes(raw, count, limits.max_bytes_element)
    except InvalidArgument as error:
        raise InvalidArgument(f"input '{name}': {error.message}") from None


def raw_bytes(tensor: Tensor) -> bytes:
    """The raw form of an output tensor."""
    if tensor.datatype == "BYTES":
        return encode_bytes(tensor.data)
    dtype = numpy_dtype(tensor.datatype).newbyteorder("<")
    return np.ascontiguousarray(tensor.data, dtype=dtype).tobytes()
