"""Open Inference Protocol datatypes: numpy mapping, sizes, BYTES wire form.

BYTES tensors are numpy ``object`` arrays holding ``bytes``. On binary and raw
wire paths each element is a 4-byte little-endian length followed by the bytes.
BF16 has no numpy dtype of its own: it travels as ``uint16`` bit patterns
(the upper half of an IEEE float32), the way Triton's clients carry it.
"""

from __future__ import annotations

import struct
from typing import Final

import numpy as np

from modelplatform.base.errors import InvalidArgument

#: OIP datatype name -> numpy dtype (BYTES -> object).
NUMPY_DTYPES: Final[dict[str, np.dtype]] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32),
    "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
    "BF16": np.dtype(np.uint16),
    "BYTES": np.dtype(object),
}

DATATYPES: Final[frozenset[str]] = frozenset(NUMPY_DTYPES)

#: Triton ModelConfig enum name -> OIP datatype name.
CONFIG_TO_DATATYPE: Final[dict[str, str]] = {
    **{f"TYPE_{name}": name for name in NUMPY_DTYPES if name != "BYTES"},
    "TYPE_STRING": "BYTES",
}
DATATYPE_TO_CONFIG: Final[dict[str, str]] = {v: k for k, v in CONFIG_TO_DATATYPE.items()}

_FROM_NUMPY: Final[dict[np.dtype, str]] = {
    dtype: name for name, dtype in NUMPY_DTYPES.items() if name not in ("BF16",)
}
_LENGTH = struct.Struct("<I")
#: The wire's byte order for each fixed-size datatype, made once (newbyteorder builds a dtype).
_WIRE_DTYPES: Final[dict[str, np.dtype]] = {
    name: dtype.newbyteorder("<") for name, dtype in NUMPY_DTYPES.items() if name != "BYTES"
}


def numpy_dtype(datatype: str) -> np.dtype:
    """The numpy dtype for an OIP datatype; raises InvalidArgument if unknown."""
    try:
        return NUMPY_DTYPES[datatype]
    except KeyError:
        raise InvalidArgument(f"unknown datatype '{datatype}'") from None


def datatype_of(array: np.ndarray) -> str:
    """The OIP datatype of a numpy array (str/bytes object arrays are BYTES)."""
    if array.dtype.kind in ("O", "S", "U"):
        return "BYTES"
    try:
        return _FROM_NUMPY[array.dtype]
    except KeyError:
        raise InvalidArgument(f"numpy dtype {array.dtype} has no OIP datatype") from None


def element_size(datatype: str) -> int:
    """Bytes per element for fixed-size datatypes; 0 for BYTES."""
    return 0 if datatype == "BYTES" else numpy_dtype(datatype).itemsize


def as_bytes_array(array: np.ndarray) -> np.ndarray:
    """An object array of ``bytes`` from any str/bytes/object array (str -> UTF-8)."""
    if array.dtype == object and all(isinstance(x, bytes) for x in array.flat):
        return array
    out = np.empty(array.shape, dtype=object)
    for index, item in np.ndenumerate(array):
        out[index] = item.encode() if isinstance(item, str) else bytes(item)
    return out


def encode_bytes(array: np.ndarray) -> bytes:
    """Serialise a BYTES tensor as length-prefixed elements, row-major."""
    parts: list[bytes] = []
    for item in array.flat:
        data = item.encode() if isinstance(item, str) else bytes(item)
        parts.append(_LENGTH.pack(len(data)))
        parts.append(data)
    return b"".join(parts)


def decode_bytes(buffer: bytes | memoryview, count: int, max_element_bytes: int | None = None) -> np.ndarray:
    """Parse ``count`` length-prefixed elements that must fill ``buffer`` exactly."""
    view = memoryview(buffer)
    out = np.empty(count, dtype=object)
    offset = 0
    for index in range(count):
        if offset + 4 > len(view):
            raise InvalidArgument(f"BYTES data ends after {index} of {count} elements")
        (length,) = _LENGTH.unpack_from(view, offset)
        offset += 4
        if max_element_bytes is not None and length > max_element_bytes:
            raise InvalidArgument(f"BYTES element of {length} bytes is over the limit of {max_element_bytes}")
        if offset + length > len(view):
            raise InvalidArgument(f"BYTES element {index} runs past the end of its data")
        out[index] = bytes(view[offset : offset + length])
        offset += length
    if offset != len(view):
        raise InvalidArgument(f"BYTES data has {len(view) - offset} unexpected trailing bytes")
    return out


#: Inputs below this size whose bytes sit at an address their element size does not divide
#: are copied to aligned memory (see :func:`aligned`); larger ones stay views, as copying
#: them would cost more than the slower arithmetic.
ALIGN_COPY_BYTES: Final = 64 * 1024


def aligned(array: np.ndarray) -> np.ndarray:
    """``array``, or a read-only aligned copy of it when it is misaligned and small.

    A protocol frame puts a tensor's bytes wherever its headers end, so a view over
    them is often misaligned (an INT32 at an offset of 2). numpy, and the frameworks
    that take numpy arrays, run every operation on such an array through a slower
    buffered path: on a busy gRPC server that cost about 9 µs of the event loop per
    call for ``simple`` (docs/performance.md, issue 32, eighth session). The copy is
    read-only, as the view it replaces.
    """
    if array.flags.aligned or array.nbytes >= ALIGN_COPY_BYTES:
        return array
    copy = array.copy()
    copy.flags.writeable = False
    return copy


def from_buffer(buffer: bytes | memoryview, datatype: str, count: int) -> np.ndarray:
    """A zero-copy flat array over ``buffer`` for a fixed-size datatype (a small misaligned
    one is copied to aligned memory: :func:`aligned`)."""
    dtype = _WIRE_DTYPES.get(datatype)
    if dtype is None:
        numpy_dtype(datatype)  # unknown: its error
        raise InvalidArgument(f"{datatype} data has no fixed-size raw form")
    expected = count * dtype.itemsize
    if len(buffer) != expected:
        raise InvalidArgument(
            f"{datatype} data is {len(buffer)} bytes, expected {expected} for {count} elements"
        )
    array = np.frombuffer(buffer, dtype=dtype, count=count)
    return array.view(np.bool_) if datatype == "BOOL" else aligned(array)
