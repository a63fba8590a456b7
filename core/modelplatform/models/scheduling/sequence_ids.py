"""A request's place in a sequence: Triton's ``sequence_id``, ``sequence_start``, ``sequence_end``.

Every dialect hands these over as plain request parameters (OIP JSON
parameters, gRPC ``InferParameter``); only the sequence batcher reads them,
so a stateless model pays nothing. An id is an unsigned 64-bit integer or a
string; 0 and "" mean "no sequence", as on Triton.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from modelplatform.base.errors import InvalidArgument

SequenceId = int | str
UINT64_MAX = 2**64 - 1
#: Triton's request flags (TRITONSERVER_REQUEST_FLAG_SEQUENCE_START / _END).
FLAG_START = 1
FLAG_END = 2


@dataclass(frozen=True, slots=True)
class SequenceFlags:
    """The sequence parameters of one request, checked."""

    id: SequenceId
    start: bool
    end: bool

    @property
    def flags(self) -> int:
        """Triton's request flags word."""
        return (FLAG_START if self.start else 0) | (FLAG_END if self.end else 0)


def sequence_flags(parameters: Mapping[str, Any]) -> SequenceFlags:
    """The request's sequence id and flags; a value of the wrong type is refused by name."""
    return SequenceFlags(
        _sequence_id(parameters.get("sequence_id", 0)),
        _flag(parameters, "sequence_start"),
        _flag(parameters, "sequence_end"),
    )


def _sequence_id(value: Any) -> SequenceId:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= UINT64_MAX:
        return value
    raise InvalidArgument(
        "invalid value for 'sequence_id' parameter, expected an unsigned 64-bit integer or a string"
    )


def _flag(parameters: Mapping[str, Any], name: str) -> bool:
    value = parameters.get(name, False)
    if not isinstance(value, bool):
        raise InvalidArgument(f"invalid value type for '{name}' parameter, expected a boolean")
    return value
