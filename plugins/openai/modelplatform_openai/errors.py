"""OpenAI's error shape and status codes.

Every error answer is ``{"error": {"message", "type", "param", "code"}}``.
``type`` is ``invalid_request_error`` below 500 and ``server_error`` from
500 on, as OpenAI answers; ``param`` names the request field at fault when
the dialect knows it (:class:`FieldError`), else null. :func:`answered`
wraps each handler so that what it raises is answered so.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import structlog

from modelplatform import (
    ErrorCode,
    HttpReply,
    HttpRequest,
    InvalidArgument,
    ModelPlatformError,
    NotFound,
    PayloadTooLarge,
)

log = structlog.get_logger("modelplatform.openai")
Handler = Callable[[HttpRequest], Awaitable[HttpReply]]

HTTP_STATUS: dict[ErrorCode, int] = {
    ErrorCode.INVALID_ARGUMENT: 400,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.UNAVAILABLE: 503,
    ErrorCode.UNSUPPORTED: 400,
    ErrorCode.ALREADY_EXISTS: 400,
    ErrorCode.CANCELLED: 400,
    ErrorCode.DEADLINE_EXCEEDED: 504,
    ErrorCode.RESOURCE_EXHAUSTED: 413,
    ErrorCode.PERMISSION_DENIED: 403,
    ErrorCode.INTERNAL: 500,
}
#: The ``code`` of an answer with this status when the error names none.
_STATUS_CODES = {401: "invalid_api_key", 403: "permission_denied", 404: "not_found", 413: "request_too_large"}


class FieldError(InvalidArgument):
    """A request field the dialect refuses: its name becomes the error's ``param``."""

    def __init__(self, message: str, param: str, code: str | None = None) -> None:
        super().__init__(message)
        self.param = param
        self.openai_code = code


class UnsupportedParameter(FieldError):
    """A field OpenAI defines that this server does not implement: refused by name, never dropped."""

    def __init__(self, param: str) -> None:
        super().__init__(f"Unsupported parameter: '{param}' is not supported by this server.", param,
                         "unsupported_parameter")  # fmt: skip


class UnknownModel(NotFound):
    """A model the server does not serve: 404 ``model_not_found``, naming the field ``model``."""

    def __init__(self, name: str, why: str) -> None:
        super().__init__(f"The model '{name}' does not exist: {why}")
        self.param = "model"
        self.openai_code = "model_not_found"


class UnknownParameter(FieldError):
    def __init__(self, param: str) -> None:
        super().__init__(f"Unrecognized request argument supplied: {param}", param, "unknown_parameter")


def http_status(error: ModelPlatformError) -> int:
    return HTTP_STATUS.get(error.code, 400)


def error_document(
    message: str, status: int, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return {
        "error": {"message": message, "type": kind, "param": param, "code": code or _STATUS_CODES.get(status)}
    }


def render_error(message: str, status: int) -> HttpReply:
    """The dialect's renderer for errors the core answers (access, bounds, unknown paths)."""
    return HttpReply(status, orjson.dumps(error_document(message, status)))


def error_reply(error: ModelPlatformError, status: int) -> HttpReply:
    """The answer to an error a handler raised, with its field and code when it names them."""
    param = getattr(error, "param", None)
    code = getattr(error, "openai_code", None)
    return HttpReply(status, orjson.dumps(error_document(error.message, status, param, code)))


def answered(handler: Handler) -> Handler:
    """The handler with its errors answered in OpenAI's shape, ``param`` and ``code`` included."""

    @functools.wraps(handler)
    async def run(request: HttpRequest) -> HttpReply:
        try:
            return await handler(request)
        except ModelPlatformError as error:
            if not error.logged:
                log.info("request_failed", path=request.path, code=error.code.value, error=error.message)
                error.logged = True
            status = 413 if isinstance(error, PayloadTooLarge) else http_status(error)
            return error_reply(error, status)

    return run
