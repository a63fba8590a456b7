"""Raw tensor bytes <-> numpy, shared by oip-grpc (raw contents) and the binary extension.

Raw form: little-endian, row-major, no padding; BOOL one byte per element;
BYTES each element as a 4-byte little-endian length followed by its bytes.
Fixed-size inputs become views over the caller's buffer (no copy), but for small
misaligned ones, copied aligned (``modelplatform.datatypes.aligned``).
"""

from __future__ import annotations

import numpy as np

from modelplatform import InvalidArgument, Limits, Tensor
from modelplatform.datatypes import DATATYPES, decode_bytes, encode_bytes, from_buffer, numpy_dtype


def raw_array(name: str, datatype: str, count: int, raw: bytes | memoryview, limits: Limits) -> np.ndarray:
    """A flat array of ``count`` elements over ``raw`` (a view for fixed-size types)."""
    try:
        if datatype != "BYTES":
            return from_buffer(raw, datatype, count)
        if count * 4 > len(raw):  # every element needs its 4-byte length: refuse before allocating
            raise InvalidArgument(f"{len(raw)} bytes cannot hold {count} BYTES elements")
        return decode_bytes(raw, count, limits.max_bytes_element)
    except InvalidArgument as error:
        raise InvalidArgument(f"input '{name}': {error.message}") from None


#: Below this size copying is cheaper than looking for a buffer to share.
SHARE_FROM_BYTES = 64 * 1024
#: Each fixed-size datatype's raw form as a numpy dtype: an array of it is its raw bytes.
LITTLE_ENDIAN = {name: numpy_dtype(name).newbyteorder("<") for name in DATATYPES if name != "BYTES"}


def raw_view(tensor: Tensor) -> bytes | memoryview:
    """The raw form of an output tensor, as a view over its array where one will do.

    An array that is already contiguous little-endian of its datatype is not
    copied: its own memory (or the request buffer it views) is returned.
    """
    if tensor.datatype == "BYTES":
        return encode_bytes(tensor.data)
    array = np.ascontiguousarray(tensor.data, dtype=LITTLE_ENDIAN[tensor.datatype])
    if array.nbytes < SHARE_FROM_BYTES:
        return array.tobytes()
    whole = _whole_bytes(array)
    if whole is not None:
        return whole
    return array.reshape(-1).view(np.uint8).data  # the array's memory as a flat byte view


def raw_bytes(tensor: Tensor) -> bytes:
    """The raw form as ``bytes`` (what protobuf fields take): copied only when it must be."""
    view = raw_view(tensor)
    return view if isinstance(view, bytes) else bytes(view)


def _whole_bytes(array: np.ndarray) -> bytes | None:
    """The bytes object ``array`` spans exactly (e.g. a gRPC request's raw input), if any."""
    base: object = array
    while isinstance(base, np.ndarray):
        base = base.base
    if not isinstance(base, bytes) or len(base) != array.nbytes:
        return None
    start = np.frombuffer(base, np.uint8, count=1).ctypes.data
    return base if start == array.ctypes.data else None
