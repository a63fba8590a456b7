"""The ``/v2`` bodies as JSON Schemas, for the OpenAPI documents (``RouteDoc``).

What the Open Inference Protocol's REST specification says of each body
(KServe's ``rest_predict_v2.yaml``, Triton's extensions), written with the
keywords OpenAPI 3.0 and 3.1 read alike. The per-model request
(:func:`model_infer_request`) names the model's inputs, datatypes and shapes
from its metadata.
"""

from __future__ import annotations

from typing import Any

from modelplatform import ModelMetadata, RouteDoc, TensorMetadata
from modelplatform.datatypes import DATATYPES

_OBJECT: dict[str, Any] = {"type": "object"}
_PARAMETERS: dict[str, Any] = {"type": "object", "description": "Parameters: name -> value"}
_SHAPE: dict[str, Any] = {"type": "array", "items": {"type": "integer", "minimum": -1}}
_DATATYPE: dict[str, Any] = {"type": "string", "enum": sorted(DATATYPES)}
_DATA: dict[str, Any] = {"description": "Tensor elements, row-major, flat or nested", "type": "array"}

TENSOR_METADATA = {"type": "object", "required": ["name", "datatype", "shape"], "properties": {
    "name": {"type": "string"}, "datatype": {"type": "string"}, "shape": _SHAPE}}  # fmt: skip
REQUEST_INPUT = {"type": "object", "required": ["name", "shape", "datatype"], "properties": {
    "name": {"type": "string"}, "shape": _SHAPE, "datatype": _DATATYPE, "parameters": _PARAMETERS,
    "data": _DATA}}  # fmt: skip
REQUEST_OUTPUT: dict[str, Any] = {"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string"}, "parameters": _PARAMETERS}}  # fmt: skip
INFER_REQUEST: dict[str, Any] = {"type": "object", "required": ["inputs"], "properties": {
    "id": {"type": "string"}, "parameters": _PARAMETERS,
    "inputs": {"type": "array", "items": REQUEST_INPUT, "minItems": 1},
    "outputs": {"type": "array", "items": REQUEST_OUTPUT}}}  # fmt: skip
RESPONSE_OUTPUT = {"type": "object", "required": ["name", "shape", "datatype"], "properties": {
    "name": {"type": "string"}, "shape": _SHAPE, "datatype": {"type": "string"},
    "parameters": _PARAMETERS, "data": _DATA}}  # fmt: skip
INFER_RESPONSE = {"type": "object", "required": ["model_name", "outputs"], "properties": {
    "model_name": {"type": "string"}, "model_version": {"type": "string"}, "id": {"type": "string"},
    "parameters": _PARAMETERS, "outputs": {"type": "array", "items": RESPONSE_OUTPUT}}}  # fmt: skip
SERVER_METADATA = {"type": "object", "required": ["name", "version", "extensions"], "properties": {
    "name": {"type": "string"}, "version": {"type": "string"},
    "extensions": {"type": "array", "items": {"type": "string"}}}}  # fmt: skip
MODEL_METADATA = {"type": "object", "required": ["name", "platform", "inputs", "outputs"], "properties": {
    "name": {"type": "string"}, "versions": {"type": "array", "items": {"type": "string"}},
    "platform": {"type": "string"}, "inputs": {"type": "array", "items": TENSOR_METADATA},
    "outputs": {"type": "array", "items": TENSOR_METADATA}}}  # fmt: skip
STATISTICS = {"type": "object", "required": ["model_stats"], "properties": {
    "model_stats": {"type": "array", "items": _OBJECT}}}  # fmt: skip
LOG_SETTINGS = {"type": "object", "description": "Triton's logging settings (log_verbose_level, ...)"}
#: Health answers: 200 with an empty body, or 400 (Triton's answers).
_HEALTH = {200: None, 400: None}


def model_infer_request(metadata: ModelMetadata) -> dict[str, Any]:
    """An infer body for one model: each input by name, with its datatype and shape."""
    inputs = [_model_input(tensor) for tensor in metadata.inputs]
    described = {"type": "array", "items": {"oneOf": inputs} if inputs else REQUEST_INPUT, "minItems": 1}
    outputs = {"type": "array", "items": {**REQUEST_OUTPUT, "properties": {
        **REQUEST_OUTPUT["properties"], "name": {"type": "string", "enum": [t.name for t in metadata.outputs]}}}}  # fmt: skip
    return {**INFER_REQUEST, "properties": {**INFER_REQUEST["properties"], "inputs": described,
                                            "outputs": outputs if metadata.outputs else REQUEST_OUTPUT}}  # fmt: skip


def _model_input(tensor: TensorMetadata) -> dict[str, Any]:
    dims = len(tensor.shape)
    shape = {**_SHAPE, "minItems": dims, "maxItems": dims,
             "description": f"{tensor.shape} (-1: any size)"}  # fmt: skip
    return {"type": "object", "title": tensor.name, "required": ["name", "shape", "datatype"], "properties": {
        "name": {"type": "string", "enum": [tensor.name]}, "datatype": {"type": "string", "enum": [tensor.datatype]},
        "shape": shape, "parameters": _PARAMETERS, "data": _DATA}}  # fmt: skip


def health(summary: str) -> RouteDoc:
    return RouteDoc(summary=summary, responses=_HEALTH, response_type="text/plain")


def answers(summary: str, schema: dict[str, Any], request: dict[str, Any] | None = None) -> RouteDoc:
    return RouteDoc(summary=summary, request=request, responses={200: schema})


INFER = RouteDoc(
    summary="Run an inference",
    request=INFER_REQUEST,
    responses={200: INFER_RESPONSE},
    other_types=("application/octet-stream",),
    model_request=model_infer_request,
    description="JSON tensors, or the binary tensor extension (Inference-Header-Content-Length).",
)
