"""grpc_guard: the one wrapper that turns a handler's errors into gRPC statuses.

Every test runs twice: the guard alone (as a dialect registers it) and as the
server runs it, folded into the call's request scope (grpc_scopes.py).
"""

from __future__ import annotations

import asyncio
import functools

import grpc
import pytest
from structlog.testing import capture_logs

from modelplatform import ModelNotFound, PermissionDenied, grpc_guard
from modelplatform.base.observing import ScopeOpener
from modelplatform.frontends.grpc_scopes import scoped_handler


class FakeContext:
    """Records the abort and raises as grpc.aio's context does."""

    def __init__(self) -> None:
        self.aborted: tuple[grpc.StatusCode, str] | None = None

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.aborted = (code, details)
        raise grpc.aio.AbortError()

    def time_remaining(self) -> float | None:
        return None  # the call has no deadline

    def invocation_metadata(self) -> tuple:
        return ()


@pytest.fixture(params=["alone", "in its scope"])
def served(request):
    """The guarded behaviour as grpc.aio would call it."""
    if request.param == "alone":
        return lambda behaviour: behaviour
    refused: list[object] = []

    def in_scope(behaviour):
        handler = grpc.unary_unary_rpc_method_handler(behaviour)
        return scoped_handler(handler, "test", ScopeOpener(()), refused.append).unary_unary

    return in_scope


def failing(error: BaseException):
    async def handler(request, context):
        raise error

    return handler


async def _call(handler, context: FakeContext):
    with capture_logs() as logs:
        with pytest.raises(grpc.aio.AbortError):
            await handler("request", context)
    return [entry for entry in logs if entry["event"] == "request_failed"]


async def test_a_success_passes_through_untouched(served):
    async def handler(request, context):
        return f"answer to {request}"

    context = FakeContext()
    assert await served(grpc_guard(handler))("question", context) == "answer to question"
    assert context.aborted is None


async def test_a_platform_error_keeps_its_words_and_maps_to_its_status(served):
    context = FakeContext()
    logs = await _call(served(grpc_guard(failing(ModelNotFound("simple", "3")))), context)
    assert context.aborted == (grpc.StatusCode.NOT_FOUND, ModelNotFound("simple", "3").message)
    assert len(logs) == 1 and logs[0]["code"] == "NOT_FOUND"


async def test_an_unexpected_error_is_internal_with_its_type_only_and_logged_once(served):
    context = FakeContext()
    logs = await _call(served(grpc_guard(failing(KeyError("secret data")))), context)
    assert context.aborted == (grpc.StatusCode.INTERNAL, "internal error: KeyError")
    assert len(logs) == 1 and logs[0]["log_level"] == "error" and logs[0]["error"] == "KeyError"


async def test_a_dialect_can_word_internal_errors_its_own_way(served):
    context = FakeContext()
    tf_guard = functools.partial(grpc_guard, internal_prefix="Internal error")
    await _call(served(tf_guard(failing(ValueError("x")))), context)
    assert context.aborted == (grpc.StatusCode.INTERNAL, "Internal error: ValueError")


async def test_methods_are_guarded_too(served):
    class Servicer:
        @grpc_guard
        async def Method(self, request, context):  # a gRPC method name
            raise PermissionDenied("restricted")

    context = FakeContext()
    await _call(served(Servicer().Method), context)
    assert context.aborted == (grpc.StatusCode.PERMISSION_DENIED, "restricted")
    assert Servicer.Method.__name__ == "Method"


async def test_cancellation_and_the_handlers_own_abort_pass_through(served):
    context = FakeContext()
    with pytest.raises(asyncio.CancelledError):
        await served(grpc_guard(failing(asyncio.CancelledError())))("request", context)
    assert context.aborted is None

    async def aborting(request, context):
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "not here")

    logs = await _call(served(grpc_guard(aborting)), context)
    assert context.aborted == (grpc.StatusCode.UNIMPLEMENTED, "not here") and logs == []


async def test_an_error_the_dataplane_already_logged_is_not_logged_again(served):
    error = ModelNotFound("simple", "")
    error.logged = True  # as DataPlane.infer marks what it logged
    context = FakeContext()
    logs = await _call(served(grpc_guard(failing(error))), context)
    assert context.aborted == (grpc.StatusCode.NOT_FOUND, error.message) and logs == []


async def test_the_scope_runs_the_guard_s_handler_itself_but_never_skips_an_outer_wrapper(served):
    calls: list[str] = []

    async def handler(request, context):
        calls.append("handler")
        return "answer"

    def outer(behaviour):  # another decorator over the guard, copying its attributes
        @functools.wraps(behaviour)
        async def wrapper(request, context):
            calls.append("outer")
            return await behaviour(request, context)

        return wrapper

    guarded = grpc_guard(handler)
    assert await served(outer(guarded))("request", FakeContext()) == "answer"
    assert calls == ["outer", "handler"]
    in_scope = scoped_handler(grpc.unary_unary_rpc_method_handler(guarded), "test", ScopeOpener(()), None)
    assert in_scope.unary_unary.__name__ == "guarded_in_scope"  # one coroutine, not two nested
