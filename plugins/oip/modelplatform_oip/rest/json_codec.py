"""The Open Inference Protocol JSON body: request parsing and response rendering.

``parse_request`` is shared with the binary extension, which supplies
``read_binary`` to hand out each input's slice of the body; ``read_region``
resolves inputs that name a shared-memory region (regions.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import orjson

from modelplatform import (
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    Limits,
    RequestedOutput,
    Tensor,
)
from modelplatform.datatypes import DATATYPES

from ..regions import REGION, RegionReader, in_region, names_region
from .codec import EncodedResponse
from .json_tensors import array_from_json, array_to_json

#: Request parameter names Triton keeps for itself (``_refuse_reserved``).
RESERVED_PREFIX = "triton_"
#: Builds an input's array from its slice of a binary body (the binary extension).
BinaryReader = Callable[[str, str, list[int], int, Limits], np.ndarray]


def load_json(body: bytes | bytearray | memoryview, what: str = "the request body") -> dict[str, Any]:
    """The body's top-level JSON object; ``what`` names it when it is not one."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise InvalidArgument(f"failed to parse the request JSON: {error}") from None
    if not isinstance(doc, dict):
        raise InvalidArgument(f"{what} must be a JSON object")
    return doc


def parse_request(
    doc: dict[str, Any],
    model: str,
    version: str,
    limits: Limits,
    read_binary: BinaryReader | None = None,
    read_region: RegionReader | None = None,
    *,
    reserved_refused: bool = True,
) -> InferenceRequest:
    """An infer request's document as the core's request. ``reserved_refused``: refuse request
    parameters named ``triton_...``, as Triton's HTTP infer does (its generate endpoint does not)."""
    inputs = doc.get("inputs")
    if not isinstance(inputs, list) or not inputs:
        raise InvalidArgument("the request must have a non-empty 'inputs' list")
    parameters = _parameters(doc.get("parameters"), "request")
    if reserved_refused and parameters:
        _refuse_reserved(parameters)
    return InferenceRequest(
        model_name=model,
        model_version=version,
        id=_string(doc.get("id", ""), "id"),
        parameters=parameters,
        inputs=[_input(item, limits, read_binary, read_region) for item in inputs],
        outputs=_outputs(doc.get("outputs")),
    )


def _input(
    item: Any, limits: Limits, read_binary: BinaryReader | None, read_region: RegionReader | None
) -> Tensor:
    if not isinstance(item, dict):
        raise InvalidArgument("each input must be a JSON object")
    name = _string(item.get("name"), "input name")
    datatype = item.get("datatype")
    if not isinstance(datatype, str) or datatype not in DATATYPES:  # a list is unhashable
        raise InvalidArgument(f"input '{name}': unknown datatype {datatype!r}")
    shape = item.get("shape")
    if not isinstance(shape, list) or not all(_is_int(d) for d in shape):
        raise InvalidArgument(f"input '{name}': 'shape' must be a list of integers")
    parameters = _parameters(item.get("parameters"), f"input '{name}'")
    if names_region(parameters):
        array = _region_data(name, datatype, shape, item, parameters, limits, read_region)
    else:
        array = _input_data(name, datatype, shape, item, parameters, limits, read_binary)
    return Tensor(name, datatype, tuple(shape), array, parameters)


def _input_data(
    name: str,
    datatype: str,
    shape: list[int],
    item: dict[str, Any],
    parameters: dict[str, Any],
    limits: Limits,
    read_binary: BinaryReader | None,
) -> np.ndarray:
    size = parameters.get("binary_data_size")
    if size is None:
        if "data" not in item:
            raise InvalidArgument(f"input '{name}': no 'data' and no binary_data_size")
        return array_from_json(name, datatype, shape, item["data"], limits)
    if read_binary is None:
        raise InvalidArgument(f"input '{name}': binary_data_size needs the binary tensor data extension")
    if not _is_int(size) or size < 0:
        raise InvalidArgument(f"input '{name}': binary_data_size must be a non-negative integer")
    return read_binary(name, datatype, shape, size, limits)


def _region_data(
    name: str,
    datatype: str,
    shape: list[int],
    item: dict[str, Any],
    parameters: dict[str, Any],
    limits: Limits,
    read_region: RegionReader | None,
) -> np.ndarray:
    if "data" in item or "binary_data_size" in parameters:
        raise InvalidArgument(f"input '{name}': '{REGION}' cannot be given with 'data' or 'binary_data_size'")
    if read_region is None:
        raise InvalidArgument(f"input '{name}': shared memory regions are not served here")
    return read_region(name, datatype, shape, parameters, limits)


def _outputs(value: Any) -> list[RequestedOutput] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise InvalidArgument("'outputs' must be a list")
    outputs = []
    for item in value:
        if not isinstance(item, dict):
            raise InvalidArgument("each requested output must be a JSON object")
        name = _string(item.get("name"), "output name")
        outputs.append(RequestedOutput(name, _parameters(item.get("parameters"), f"output '{name}'")))
    return outputs


def _parameters(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidArgument(f"{where} 'parameters' must be a JSON object")
    return value


def _refuse_reserved(parameters: dict[str, Any]) -> None:
    """Triton (2.33 and later) keeps request parameters named ``triton_...`` for itself: its HTTP
    infer answers 400 for any of them (gRPC allows one, rpc/parameters.py)."""
    if any(key.startswith(RESERVED_PREFIX) for key in parameters):
        raise InvalidArgument(
            "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified."
        )


def _string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidArgument(f"{what} must be a string")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def response_document(response: InferenceResponse, outputs: list[dict[str, Any]]) -> dict[str, Any]:
    """The response object around already-rendered outputs (shared with binary)."""
    doc: dict[str, Any] = {}
    if response.id:
        doc["id"] = response.id
    doc["model_name"] = response.model_name
    doc["model_version"] = response.model_version
    if response.parameters:
        doc["parameters"] = response.parameters
    doc["outputs"] = outputs
    return doc


def json_output(tensor: Tensor) -> dict[str, Any]:
    """A JSON output: no ``parameters`` key (perf_analyzer reads one as binary).

    An output written into a shared-memory region keeps its name, type and
    shape and carries no data, as Triton answers.
    """
    if in_region(tensor):
        return region_output(tensor)
    return {
        "name": tensor.name,
        "datatype": tensor.datatype,
        "shape": list(tensor.shape),
        "data": array_to_json(tensor.data),
    }


def region_output(tensor: Tensor) -> dict[str, Any]:
    return {"name": tensor.name, "datatype": tensor.datatype, "shape": list(tensor.shape)}


def encode_json(response: InferenceResponse) -> EncodedResponse:
    if any(t.datatype == "BF16" and not in_region(t) for t in response.outputs):
        raise InvalidArgument("BF16 outputs can only be returned binary")
    doc = response_document(response, [json_output(t) for t in response.outputs])
    return EncodedResponse(orjson.dumps(doc), "application/json", {})
