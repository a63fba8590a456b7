"""The one table from neutral error codes to HTTP status (Triton's mapping)."""

from __future__ import annotations

from modelplatform import ErrorCode, ModelPlatformError

HTTP_STATUS: dict[ErrorCode, int] = {
    ErrorCode.INVALID_ARGUMENT: 400,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.UNAVAILABLE: 503,
    ErrorCode.UNSUPPORTED: 501,
    ErrorCode.ALREADY_EXISTS: 400,
    ErrorCode.CANCELLED: 400,
    ErrorCode.DEADLINE_EXCEEDED: 504,
    ErrorCode.RESOURCE_EXHAUSTED: 413,
    ErrorCode.PERMISSION_DENIED: 403,
    ErrorCode.INTERNAL: 500,
}


def http_status(error: ModelPlatformError) -> int:
    return HTTP_STATUS.get(error.code, 400)
