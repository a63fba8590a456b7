"""TensorFlow DataType names for the platform's datatypes, both directions.

``DT_NAMES`` gives the enum name used in metadata JSON and protos;
``TYPE_STRINGS`` gives TensorFlow's ``DataTypeString`` (``float``, ``int32``)
that TF Serving's error messages print.
"""

from __future__ import annotations

from typing import Final

DT_NAMES: Final[dict[str, str]] = {
    "BOOL": "DT_BOOL",
    "UINT8": "DT_UINT8",
    "UINT16": "DT_UINT16",
    "UINT32": "DT_UINT32",
    "UINT64": "DT_UINT64",
    "INT8": "DT_INT8",
    "INT16": "DT_INT16",
    "INT32": "DT_INT32",
    "INT64": "DT_INT64",
    "FP16": "DT_HALF",
    "FP32": "DT_FLOAT",
    "FP64": "DT_DOUBLE",
    "BF16": "DT_BFLOAT16",
    "BYTES": "DT_STRING",
}
FROM_DT_NAME: Final[dict[str, str]] = {v: k for k, v in DT_NAMES.items()}

TYPE_STRINGS: Final[dict[str, str]] = {
    "BOOL": "bool",
    "UINT8": "uint8",
    "UINT16": "uint16",
    "UINT32": "uint32",
    "UINT64": "uint64",
    "INT8": "int8",
    "INT16": "int16",
    "INT32": "int32",
    "INT64": "int64",
    "FP16": "half",
    "FP32": "float",
    "FP64": "double",
    "BF16": "bfloat16",
    "BYTES": "string",
}
