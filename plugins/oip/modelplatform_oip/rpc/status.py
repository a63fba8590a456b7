"""The one table from neutral error codes to gRPC status codes (Triton's mapping)."""

from __future__ import annotations

import grpc

from modelplatform import ErrorCode, ModelPlatformError

GRPC_STATUS: dict[ErrorCode, grpc.StatusCode] = {
    ErrorCode.INVALID_ARGUMENT: grpc.StatusCode.INVALID_ARGUMENT,
    ErrorCode.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    ErrorCode.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    ErrorCode.UNSUPPORTED: grpc.StatusCode.UNIMPLEMENTED,
    ErrorCode.ALREADY_EXISTS: grpc.StatusCode.ALREADY_EXISTS,
    ErrorCode.CANCELLED: grpc.StatusCode.CANCELLED,
    ErrorCode.DEADLINE_EXCEEDED: grpc.StatusCode.DEADLINE_EXCEEDED,
    ErrorCode.RESOURCE_EXHAUSTED: grpc.StatusCode.RESOURCE_EXHAUSTED,
    ErrorCode.PERMISSION_DENIED: grpc.StatusCode.PERMISSION_DENIED,
    ErrorCode.INTERNAL: grpc.StatusCode.INTERNAL,
}


def grpc_status(error: ModelPlatformError) -> grpc.StatusCode:
    return GRPC_STATUS.get(error.code, grpc.StatusCode.UNKNOWN)
