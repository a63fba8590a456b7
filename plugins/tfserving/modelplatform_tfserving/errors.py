"""TF Serving's words for errors, and its status tables (protocol-notes B2).

The core's neutral codes map to TF Serving's HTTP statuses here and to gRPC
codes in ``grpc/servicer.py``; message helpers build the texts TF Serving's
clients and tests match on.
"""

from __future__ import annotations

import json
from typing import Any

from modelplatform import ErrorCode, InvalidArgument, ModelPlatformError, NotFound, Unsupported

HTTP_STATUS: dict[ErrorCode, int] = {
    ErrorCode.INVALID_ARGUMENT: 400,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.UNAVAILABLE: 503,
    ErrorCode.UNSUPPORTED: 501,
    ErrorCode.ALREADY_EXISTS: 409,
    ErrorCode.CANCELLED: 499,
    ErrorCode.DEADLINE_EXCEEDED: 504,
    ErrorCode.RESOURCE_EXHAUSTED: 429,
    ErrorCode.PERMISSION_DENIED: 403,
    ErrorCode.INTERNAL: 500,
}

#: Longest JSON excerpt quoted in an error message (TF quotes the value).
MAX_QUOTE = 256


def http_status(error: ModelPlatformError) -> int:
    return HTTP_STATUS.get(error.code, 500)


def quote(value: Any) -> str:
    """A JSON value as TF's errors quote it, cut to a bounded length."""
    try:
        text = json.dumps(value, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        text = "<unprintable>"
    return text if len(text) <= MAX_QUOTE else text[:MAX_QUOTE] + "..."


def format_error(value: Any, reason: str) -> InvalidArgument:
    """TF's ``FormatError``: the offending JSON, then the reason."""
    return InvalidArgument(f"JSON Value: {quote(value)} {reason}")


def json_type(value: Any) -> str:
    """rapidjson's type names, as TF's messages print them."""
    if value is None:
        return "Null"
    if value is True:
        return "True"
    if value is False:
        return "False"
    if isinstance(value, dict):
        return "Object"
    if isinstance(value, list):
        return "Array"
    if isinstance(value, str):
        return "String"
    return "Number"


def type_error(value: Any, type_string: str) -> InvalidArgument:
    return InvalidArgument(
        f"JSON Value: {quote(value)} Type: {json_type(value)} is not of expected type: {type_string}"
    )


def unimplemented_conversion(value: Any, type_string: str) -> Unsupported:
    return Unsupported(f"Conversion of JSON Value: {quote(value)} to type: {type_string}")


def servable_not_found(name: str, version: str = "") -> NotFound:
    request = f"Specific({name}, {version})" if version else f"Latest({name})"
    return NotFound(f"Servable not found for request: {request}")


def invalid_argument_text(error: ModelPlatformError) -> str:
    """How TF prints a nested Status (``status.ToString()``)."""
    code = "UNIMPLEMENTED" if error.code is ErrorCode.UNSUPPORTED else error.code.value
    return f"{code}: {error.message}"
