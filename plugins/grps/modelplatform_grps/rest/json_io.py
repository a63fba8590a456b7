"""grps HTTP JSON: protobuf JSON of GrpsMessage plus the ``ndarray`` convenience.

Dispatch follows grps (protocol-notes C4): ``str_data`` / ``gtensors`` /
``gmap`` -> protobuf JSON; else ``ndarray``; ``bin_data`` in JSON is refused;
anything else has no legal field. ``flat_double`` (the grps docs' misspelling)
is accepted as ``flat_float64``.
"""

from __future__ import annotations

from typing import Any

import orjson
from google.protobuf import json_format

from modelplatform import InvalidArgument

from ..converter import Payload
from ..protos.grps_pb2 import GrpsMessage

JSON = "application/json"
PROTO_FIELDS = ("str_data", "strData", "gtensors", "gmap")
HTTP_ONLY = ("ndarray", "bin_data", "binData")
FLOAT64_KEYS = ("flat_float64", "flatFloat64")


def load_object(body: bytes) -> dict[str, Any]:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise InvalidArgument(f"request body is not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise InvalidArgument("request body must be a JSON object (a GrpsMessage)")
    return data


def parse_predict(data: dict[str, Any]) -> tuple[Payload, str]:
    """(payload, payload model) from a JSON predict body."""
    model = data.get("model", "")
    if not isinstance(model, str):
        raise InvalidArgument("'model' must be a string such as \"simple-1\"")
    if any(data.get(key) for key in PROTO_FIELDS):
        message = parse_message({k: v for k, v in data.items() if k not in HTTP_ONLY})
        return Payload.of(message), message.model
    if data.get("ndarray") is not None:
        return Payload("ndarray", data["ndarray"]), model
    if "bin_data" in data or "binData" in data:
        raise InvalidArgument("bin_data should use application/octet-stream format.")
    raise InvalidArgument(
        "No legal field in json: send one of str_data, gtensors, gmap or ndarray "
        "(bin_data as application/octet-stream)"
    )


def parse_message(data: dict[str, Any]) -> GrpsMessage:
    _alias_flat_double(data)
    message = GrpsMessage()
    try:
        # Unknown keys are ignored, as grps does (its client template sends gmap.s_t).
        json_format.ParseDict(data, message, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError) as error:
        raise InvalidArgument(f"invalid GrpsMessage JSON: {error}") from None
    return message


def _alias_flat_double(data: dict[str, Any]) -> None:
    gtensors = data.get("gtensors")
    tensors = gtensors.get("tensors") if isinstance(gtensors, dict) else None
    for tensor in tensors if isinstance(tensors, list) else ():
        if not isinstance(tensor, dict):
            continue
        for alias in ("flat_double", "flatDouble"):
            if alias not in tensor:
                continue
            if any(key in tensor for key in FLOAT64_KEYS):
                raise InvalidArgument(f"tensor has both {alias} and flat_float64; send flat_float64 only")
            tensor["flat_float64"] = tensor.pop(alias)


def dump_message(message: GrpsMessage) -> bytes:
    """Proto field names, enum names, int64 as strings, defaults omitted (as grps)."""
    return orjson.dumps(json_format.MessageToDict(message, preserving_proto_field_name=True))
