"""InferParameter <-> plain Python values (all five oneof choices)."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from modelplatform import InvalidArgument

from ..protos import grpc_service_pb2 as pb

_INT64_MAX = 2**63 - 1


#: Request parameters whose wire type Triton checks: the parameter choices it accepts.
_TYPED = {
    "sequence_id": ("int64_param", "string_param"),
    "sequence_start": ("bool_param",),
    "sequence_end": ("bool_param",),
    "triton_enable_empty_final_response": ("bool_param",),
}
#: The only request parameter named ``triton_...`` Triton accepts (its gRPC front end refuses
#: the others); the front end consumes it, no model sees it.
EMPTY_FINAL = "triton_enable_empty_final_response"
_RESERVED_PREFIX = "triton_"


def from_proto(parameters: Mapping[str, pb.InferParameter]) -> dict[str, Any]:
    if not parameters:  # the common case: skips a Python-level items() view per call
        return {}
    values: dict[str, Any] = {}
    for key, parameter in parameters.items():
        choice = parameter.WhichOneof("parameter_choice")
        if choice is not None:
            values[key] = getattr(parameter, choice)
    return values


def request_from_proto(parameters: Mapping[str, pb.InferParameter]) -> dict[str, Any]:
    """A request's parameters; the sequence ones and Triton's empty-final flag must have
    Triton's wire types (a uint64 ``sequence_id`` is refused as Triton refuses it: its gRPC
    front end takes int64 or string), and any other ``triton_...`` key is refused, as there."""
    if not parameters:
        return {}
    for key in parameters:
        if key.startswith(_RESERVED_PREFIX) and key != EMPTY_FINAL:
            raise InvalidArgument(
                "parameter keys starting with 'triton_' are reserved for Triton usage. Only the "
                f"following keys starting with 'triton_' are allowed: {EMPTY_FINAL}"
            )
    for key, allowed in _TYPED.items():
        if key in parameters and parameters[key].WhichOneof("parameter_choice") not in allowed:
            expected = " or ".join(allowed)
            raise InvalidArgument(f"invalid value type for '{key}' parameter, expected {expected}")
    values = from_proto(parameters)
    sequence_id = values.get("sequence_id")
    if isinstance(sequence_id, int) and sequence_id < 0:  # Triton reads the int64 as a uint64
        values["sequence_id"] = sequence_id + 2**64
    return values


def to_proto(values: Mapping[str, Any], target: MutableMapping[str, pb.InferParameter]) -> None:
    for key, value in values.items():
        parameter = target[key]
        if isinstance(value, bool):
            parameter.bool_param = value
        elif isinstance(value, int):
            if value > _INT64_MAX:
                parameter.uint64_param = value
            else:
                parameter.int64_param = value
        elif isinstance(value, float):
            parameter.double_param = value
        else:
            parameter.string_param = str(value)
