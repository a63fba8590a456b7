"""How a gRPC handler's failures become statuses: the platform's codes, and ``grpc_guard``.

Shared by every dialect's gRPC handlers (published as ``modelplatform.grpc_guard``
and ``grpc_status``) and by the server's request scopes (grpc_scopes.py), which
fold the guard into their own coroutine. Changes when the error mapping does.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import grpc
import structlog

from modelplatform.base.deadlines import transport_deadline
from modelplatform.base.errors import ErrorCode, ModelPlatformError

log = structlog.get_logger("modelplatform.grpc")

#: Neutral error codes -> canonical gRPC status codes (Triton's and TF Serving's mapping).
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
    """The gRPC status for a platform error (dialects with in-band errors don't need it)."""
    return GRPC_STATUS.get(error.code, grpc.StatusCode.UNKNOWN)


#: How a gRPC call's deadline names itself in a DEADLINE_EXCEEDED message.
GRPC_DEADLINE = "gRPC deadline"

#: The attribute a guarded handler keeps its :class:`Guarded` in.
GUARDED = "_modelplatform_guarded"

_Params = ParamSpec("_Params")
_Result = TypeVar("_Result")


def grpc_guard(
    handler: Callable[_Params, Awaitable[_Result]], *, internal_prefix: str = "internal error"
) -> Callable[_Params, Awaitable[_Result]]:
    """Wrap an async unary gRPC handler so that no error leaves it as a traceback.

    ``handler`` is a function ``(request, context)`` or a servicer method
    ``(self, request, context)``: the servicer context is always the last
    argument. A :class:`ModelPlatformError` aborts the call with
    :func:`grpc_status` and the error's own message, so every dialect says the
    same words; any other exception aborts INTERNAL with
    ``"<internal_prefix>: <TypeName>"`` (its text may hold data, so it stays in
    the log). Each failure is logged once, as ``request_failed`` (the dataplane
    logs the ones it saw; this logs the rest). Cancellation (a
    gone client, a missed deadline) and an abort the handler raised itself
    pass through untouched, so the handler's work unwinds. The call's
    deadline becomes the transport deadline of the requests it makes
    (deadlines.py), so a request past it never reaches a backend.

    Use it as ``@grpc_guard``; a dialect whose wording differs binds its own
    prefix (``functools.partial(grpc_guard, internal_prefix="Internal error")``).
    """
    method = handler.__qualname__

    @functools.wraps(handler)
    async def guarded(*args: _Params.args, **kwargs: _Params.kwargs) -> _Result:
        context: grpc.aio.ServicerContext = args[-1]
        try:
            remaining = context.time_remaining()
            if remaining is None:  # no deadline (most calls): no context manager to enter
                return await handler(*args, **kwargs)
            with transport_deadline(remaining, GRPC_DEADLINE):
                return await handler(*args, **kwargs)
        except grpc.aio.AbortError:
            raise
        except Exception as error:  # becomes a status, never a traceback
            code, message = failure_status(error, method, internal_prefix)
            await context.abort(code, message)
            raise  # not reached: abort ends the call by raising

    guarded.__dict__[GUARDED] = Guarded(guarded, handler, method, internal_prefix)  # for grpc_scopes.py
    return guarded


@dataclass(frozen=True, slots=True)
class Guarded:
    """What :func:`grpc_guard` wrapped: the server's request scope does the guard's work
    itself around ``handler`` (grpc_scopes.py), one coroutine fewer on every call."""

    #: The guard itself: a wrapper copying its attributes (functools.wraps) is not it.
    guard: Callable[..., Awaitable[Any]]
    handler: Callable[..., Awaitable[Any]]
    method: str
    internal_prefix: str

    def bound_to(self, instance: object) -> Guarded:
        """The same guard for a servicer method reached through ``instance`` (``@grpc_guard``
        on a method: the handler registered is the guard bound to its servicer)."""
        return Guarded(self.guard, self.handler.__get__(instance), self.method, self.internal_prefix)


def guarded_of(behaviour: Callable[..., Any]) -> Guarded | None:
    """What :func:`grpc_guard` wrapped to make ``behaviour``, if it did."""
    guarded = getattr(behaviour, GUARDED, None)
    function = getattr(behaviour, "__func__", behaviour)  # a bound method: its function
    if not isinstance(guarded, Guarded) or guarded.guard is not function:
        return None
    instance = getattr(behaviour, "__self__", None)
    return guarded if instance is None else guarded.bound_to(instance)


def failure_status(error: Exception, method: str, internal_prefix: str) -> tuple[grpc.StatusCode, str]:
    """The status a failed call answers with; logs what the dataplane has not logged yet."""
    if isinstance(error, ModelPlatformError):
        if not error.logged:  # refused before the dataplane saw it (decoding, access checks)
            log.info("request_failed", method=method, code=error.code.value, error=error.message)
            error.logged = True
        return grpc_status(error), error.message
    log.error("request_failed", method=method, error=type(error).__name__, exc_info=error)
    return grpc.StatusCode.INTERNAL, f"{internal_prefix}: {type(error).__name__}"
