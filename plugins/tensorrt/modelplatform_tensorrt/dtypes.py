"""TensorRT datatypes by name (``trt.DataType.X.name``) -> OIP datatypes.

Keyed by name so the mapping is testable without tensorrt. FP8, INT4 and
FP4 engine I/O have no numpy form and are refused at load.
"""

from __future__ import annotations

from modelplatform import InvalidArgument

TRT_DATATYPES = {
    "FLOAT": "FP32",
    "HALF": "FP16",
    "BF16": "BF16",
    "INT8": "INT8",
    "INT32": "INT32",
    "INT64": "INT64",
    "BOOL": "BOOL",
    "UINT8": "UINT8",
}


def datatype_of(model: str, tensor: str, trt_name: str) -> str:
    try:
        return TRT_DATATYPES[trt_name]
    except KeyError:
        raise InvalidArgument(
            f"model '{model}': engine tensor '{tensor}' has TensorRT type {trt_name}, "
            f"which the server cannot carry (supported: {sorted(TRT_DATATYPES)})"
        ) from None
