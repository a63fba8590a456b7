"""Inference-Header-Content-Length 0: the whole body is the data of the model's single input.

The input's name and datatype come from the model configuration; its shape is
the configured one with the batch dimension set to 1 and at most one other
variable dimension resolved from the body's length.
"""

from __future__ import annotations

import struct

from modelplatform import InferenceRequest, InvalidArgument, Limits, ModelConfig, Tensor
from modelplatform.datatypes import element_size
from modelplatform_oip.api import raw_array

_LENGTH = struct.Struct("<I")


def raw_request(
    body: bytes | bytearray, model: str, version: str, config: ModelConfig, limits: Limits
) -> InferenceRequest:
    if len(config.inputs) != 1:
        raise InvalidArgument(
            f"a raw binary request (Inference-Header-Content-Length 0) needs a model with one "
            f"input; '{model}' has {len(config.inputs)}"
        )
    spec = config.inputs[0]
    count = _element_count(spec.datatype, body, limits)
    shape = _shape(spec.full_shape(config.max_batch_size), config.batching, count, spec.name)
    array = raw_array(spec.name, spec.datatype, count, memoryview(body), limits).reshape(shape)
    tensor = Tensor(spec.name, spec.datatype, tuple(shape), array)
    return InferenceRequest(model_name=model, model_version=version, inputs=[tensor])


def _element_count(datatype: str, body: bytes | bytearray, limits: Limits) -> int:
    if datatype != "BYTES":
        size = element_size(datatype)
        if len(body) % size:
            raise InvalidArgument(f"a raw {datatype} body must be a multiple of {size} bytes")
        return len(body) // size
    return _count_bytes_elements(body, limits.max_tensor_elements)


def _count_bytes_elements(body: bytes | bytearray, limit: int) -> int:
    """Walk the length prefixes; malformed data is left for decode_bytes to name."""
    count, offset = 0, 0
    while offset + 4 <= len(body) and count <= limit:
        (length,) = _LENGTH.unpack_from(body, offset)
        offset += 4 + length
        count += 1
    return count if offset == len(body) else count + 1


def _shape(declared: list[int], batching: bool, count: int, name: str) -> list[int]:
    shape = [1, *declared[1:]] if batching else list(declared)
    variable = [i for i, dim in enumerate(shape) if dim == -1]
    known = 1
    for dim in shape:
        known *= dim if dim != -1 else 1
    if len(variable) > 1:
        raise InvalidArgument(f"input '{name}': a raw binary request cannot fill shape {declared}")
    if variable:
        if known == 0 or count % known:
            raise InvalidArgument(f"input '{name}': {count} elements do not fit shape {declared}")
        shape[variable[0]] = count // known
    elif known != count:
        raise InvalidArgument(f"input '{name}': shape {shape} needs {known} elements, body has {count}")
    return shape
