"""The one table from neutral error codes to grps ``Status.code``, and status builders.

grps's Python server answers HTTP with the same number as ``status.code``; we
do the same. gRPC always answers OK with the status in the message (as grps).
"""

from __future__ import annotations

from modelplatform import ErrorCode, ModelPlatformError

from .protos.grps_pb2 import GrpsMessage, Status

OK = 200
STATUS_CODE: dict[ErrorCode, int] = {
    ErrorCode.INVALID_ARGUMENT: 400,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.UNAVAILABLE: 503,
    ErrorCode.UNSUPPORTED: 501,
    ErrorCode.ALREADY_EXISTS: 409,
    ErrorCode.CANCELLED: 499,
    ErrorCode.DEADLINE_EXCEEDED: 504,
    ErrorCode.RESOURCE_EXHAUSTED: 413,
    ErrorCode.PERMISSION_DENIED: 403,
    ErrorCode.INTERNAL: 500,
}


def status_code(error: ModelPlatformError) -> int:
    return STATUS_CODE.get(error.code, 500)


def success(message: GrpsMessage | None = None) -> GrpsMessage:
    """Stamp ``{"code": 200, "msg": "OK", "status": "SUCCESS"}`` on a message."""
    message = message if message is not None else GrpsMessage()
    message.status.code, message.status.msg, message.status.status = OK, "OK", Status.SUCCESS
    return message


def failure(code: int, msg: str) -> GrpsMessage:
    return GrpsMessage(status=Status(code=code, msg=msg, status=Status.FAILURE))


def from_error(error: ModelPlatformError) -> GrpsMessage:
    return failure(status_code(error), error.message)
