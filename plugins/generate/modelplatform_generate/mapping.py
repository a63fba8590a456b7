"""A generate request's JSON <-> the core's request and responses (Triton's rules).

Request: ``id`` is the request id; every other key naming a model input
becomes that input, the rest become request parameters; the keys of a
``parameters`` object follow the same rule. An input's value is a scalar or
a flat list; its shape comes from the model's metadata: fixed dimensions
take their size, the innermost variable one takes what remains, other
variable ones (a batch dimension) take 1. Parameters are strings, numbers
or booleans.

Response: ``id`` (when the request had one), ``model_name``,
``model_version``, the response's parameters, then each output by name,
flattened, a single element unwrapped to a scalar.
"""

from __future__ import annotations

from typing import Any

from modelplatform import (
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    Limits,
    ModelMetadata,
    TensorMetadata,
)
from modelplatform_oip.api import json_output, load_json, parse_request

#: The one key whose object holds more keys mapped the same way.
PARAMETERS = "parameters"


def load_body(body: bytes) -> dict[str, Any]:
    """The JSON object of a generate request (Triton allows an empty body)."""
    return load_json(body, "the generate request") if body else {}


def to_request(doc: dict[str, Any], meta: ModelMetadata, version: str, limits: Limits) -> InferenceRequest:
    """The request as the core's, through the oip JSON rules (types, ranges, limits)."""
    request_id = doc.pop("id", "")
    inputs_by_name = {tensor.name: tensor for tensor in meta.inputs}
    inputs: list[dict[str, Any]] = []
    parameters: dict[str, Any] = {}
    _map(doc, inputs_by_name, inputs, parameters)
    oip = {"id": request_id, "inputs": inputs, "parameters": parameters}
    if not inputs:
        raise InvalidArgument(
            f"model '{meta.name}': the generate request names none of its inputs "
            f"({', '.join(inputs_by_name) or 'none'})"
        )
    # Triton's generate endpoint passes every other key on as a parameter, triton_... included.
    return parse_request(oip, meta.name, version, limits, reserved_refused=False)


def _map(
    doc: dict[str, Any],
    inputs_by_name: dict[str, TensorMetadata],
    inputs: list[dict[str, Any]],
    parameters: dict[str, Any],
) -> None:
    for key, value in doc.items():
        spec = inputs_by_name.get(key)
        if spec is not None:
            inputs.append(_input(spec, value))
        elif key == PARAMETERS and isinstance(value, dict):
            _map(value, inputs_by_name, inputs, parameters)
        else:
            parameters[key] = _parameter(key, value)


def _input(spec: TensorMetadata, value: Any) -> dict[str, Any]:
    data = value if isinstance(value, list) else [value]
    if any(isinstance(item, (list, dict)) for item in data):
        raise InvalidArgument(f"input '{spec.name}': a value must be a scalar or a flat list")
    return {
        "name": spec.name,
        "datatype": spec.datatype,
        "shape": shape_for(spec.name, spec.shape, len(data)),
        "data": data,
    }


def shape_for(name: str, declared: list[int], count: int) -> list[int]:
    """``count`` elements laid out in the declared shape (Triton's two passes)."""
    remaining = count
    for size in declared:
        if size != -1:
            if size == 0 or remaining % size:
                raise _unshapable(name)
            remaining //= size
    shape = list(declared)
    innermost = True
    for index in reversed(range(len(shape))):
        if shape[index] == -1:
            shape[index] = remaining if innermost else 1
            innermost = False
    if innermost and remaining != 1:  # no variable dimension took the rest
        raise _unshapable(name)
    return shape


def _unshapable(name: str) -> InvalidArgument:
    return InvalidArgument(f"The schema can not convert input '{name}' to tensor with proper shape")


def _parameter(key: str, value: Any) -> str | int | float | bool:
    if isinstance(value, (str, int, float, bool)):
        return value
    raise InvalidArgument(
        f"parameter '{key}' has invalid type. It should be either 'int', 'bool', or 'string'."
    )


def response_json(response: InferenceResponse) -> dict[str, Any]:
    """The flattened answer object of one response."""
    doc: dict[str, Any] = {}
    if response.id:
        doc["id"] = response.id
    doc["model_name"] = response.model_name
    doc["model_version"] = response.model_version
    doc.update(response.parameters)
    for tensor in response.outputs:
        if tensor.datatype == "BF16":
            raise InvalidArgument(f"output '{tensor.name}': BF16 cannot be returned as JSON")
        data = json_output(tensor)["data"]
        doc[tensor.name] = data[0] if len(data) == 1 else data
    return doc
