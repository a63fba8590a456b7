"""The ``binary`` codec of oip-rest: JSON header + binary tensor data (protocol-notes A8).

Requests: the header's inputs with ``binary_data_size`` take their bytes from
the body after the header, in input order. Responses: an output is binary when
its requested ``binary_data`` says so, else when the request parameter
``binary_data_output`` is true; binary outputs carry ``binary_data_size`` and
follow the JSON, JSON outputs carry no ``parameters`` key at all.
"""

from __future__ import annotations

from typing import Any, ClassVar

import orjson

from modelplatform import InferenceRequest, InferenceResponse, InvalidArgument, Limits, ModelConfig, Tensor
from modelplatform_oip.api import (
    BINARY_CODEC,
    EncodedResponse,
    RegionReader,
    RestCodec,
    in_region,
    json_output,
    load_json,
    parse_request,
    raw_view,
    response_document,
)

from .raw_request import raw_request
from .reader import BodyReader

HEADER = "Inference-Header-Content-Length"


class BinaryCodec(RestCodec):
    name: ClassVar[str] = BINARY_CODEC
    extensions: ClassVar[tuple[str, ...]] = ("binary_tensor_data",)

    def decode(
        self,
        body: bytes | bytearray,
        header_length: int,
        model: str,
        version: str,
        config: ModelConfig,
        limits: Limits,
        read_region: RegionReader | None = None,
    ) -> InferenceRequest:
        if header_length == 0:
            return raw_request(body, model, version, config, limits)
        doc = load_json(memoryview(body)[:header_length])
        reader = BodyReader(body, header_length)
        request = parse_request(doc, model, version, limits, reader.read, read_region)
        reader.finish()
        return request

    def wants_response(self, request: InferenceRequest) -> bool:
        if _flag(request.parameters, "binary_data_output"):
            return True
        return any(_flag(o.parameters, "binary_data") for o in request.outputs or ())

    def encode(self, response: InferenceResponse, request: InferenceRequest) -> EncodedResponse:
        default = _flag(request.parameters, "binary_data_output")
        chosen = {
            o.name: o.parameters["binary_data"]
            for o in request.outputs or ()
            if "binary_data" in o.parameters
        }
        outputs: list[dict[str, Any]] = []
        blobs: list[bytes | memoryview] = []
        for tensor in response.outputs:
            if in_region(tensor):  # written into a shared-memory region: no data here
                outputs.append(json_output(tensor))
            elif _is_true(chosen.get(tensor.name, default)):
                blobs.append(raw_view(tensor))
                outputs.append(_binary_output(tensor, len(blobs[-1])))
            else:
                outputs.append(_json_output(tensor))
        header = orjson.dumps(response_document(response, outputs))
        if not blobs:
            return EncodedResponse(header, "application/json", {})
        headers = {HEADER: str(len(header))}
        # Parts, not a joined body: large outputs reach the socket as views (no copy).
        return EncodedResponse([header, *blobs], "application/octet-stream", headers)


def _binary_output(tensor: Tensor, size: int) -> dict[str, Any]:
    return {
        "name": tensor.name,
        "datatype": tensor.datatype,
        "shape": list(tensor.shape),
        "parameters": {"binary_data_size": size},
    }


def _json_output(tensor: Tensor) -> dict[str, Any]:
    if tensor.datatype == "BF16":
        raise InvalidArgument(f"output '{tensor.name}': BF16 can only be returned binary")
    return json_output(tensor)


def _flag(parameters: dict[str, Any], key: str) -> bool:
    return _is_true(parameters.get(key))


def _is_true(value: Any) -> bool:
    if value is None or isinstance(value, bool):
        return bool(value)
    raise InvalidArgument(f"binary data flags must be true or false, got {value!r}")
