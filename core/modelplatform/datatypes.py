"""The datatypes sub-API: tensor datatypes, their numpy dtypes and wire forms.

For backends and codecs that turn bytes or framework tensors into numpy
arrays and back. Datatype names are the Open Inference Protocol's (``FP32``,
``BYTES``...); model configurations spell them Triton's way (``TYPE_FP32``).
BYTES tensors are numpy ``object`` arrays of ``bytes``; on binary wire paths
each element is a 4-byte little-endian length followed by its bytes. BF16
travels as ``uint16`` bit patterns. Every function raises
:class:`modelplatform.InvalidArgument` for what a client may have sent wrong.

Everything here is public (docs/plugins/hooks.md lists the sub-APIs); the
module holding the code is private to the core.
"""

from __future__ import annotations

from modelplatform.base.dtypes import (
    CONFIG_TO_DATATYPE,
    DATATYPE_TO_CONFIG,
    DATATYPES,
    aligned,
    as_bytes_array,
    datatype_of,
    decode_bytes,
    element_size,
    encode_bytes,
    from_buffer,
    numpy_dtype,
)
from modelplatform.base.validation import element_count

__all__ = [
    "CONFIG_TO_DATATYPE",
    "DATATYPES",
    "DATATYPE_TO_CONFIG",
    "aligned",
    "as_bytes_array",
    "datatype_of",
    "decode_bytes",
    "element_count",
    "element_size",
    "encode_bytes",
    "from_buffer",
    "numpy_dtype",
]
