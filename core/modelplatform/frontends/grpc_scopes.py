"""Every gRPC handler run inside a request scope (observing.py), wrapped once at start-up.

The behaviour itself is wrapped, so the scope is set in the call's own task;
a unary inference method that fails before any counter saw it counts as a
refusal. Changes when what a call's scope holds, or how it is opened, does.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from modelplatform.base.deadlines import transport_deadline
from modelplatform.base.observing import ScopeOpener, counted_in_call, current_scope
from modelplatform.frontends.grpc_errors import GRPC_DEADLINE, Guarded, failure_status, guarded_of


class ScopeWrapper:
    """Runs every handler inside a request scope (observing.py) named by its service's protocol.

    The behaviour itself is wrapped, so the scope is set in the call's own task
    (the dataplane and a direct scheduler read it there). Handlers of services
    no plugin declared (reflection) stay as they are.
    """

    def __init__(self, protocols: dict[str, str], opener: ScopeOpener, refusals: Refusals) -> None:
        self._protocols = protocols
        self._opener = opener
        self._refusals = refusals

    def wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        """``handler`` of ``method`` (``/package.Service/Method``) wrapped once, at start-up."""
        protocol = self._protocols.get(method.lstrip("/").partition("/")[0])
        if handler is None or protocol is None:
            return handler
        model_of = self._refusals.models.get(method)
        return scoped_handler(handler, protocol, self._opener, self._refusals.counter(model_of))


#: Counts a refused call of an inference method: (its request message) -> None.
_RefusalCount = Callable[[Any], None]


class Refusals:
    """Counts failed calls of inference methods that no counter saw (GrpcService.inference_methods)."""

    def __init__(self, count_refused: Callable[[str], None], models: dict[str, Callable[[Any], str]]) -> None:
        self.count_refused = count_refused
        self.models = models

    def counter(self, model_of: Callable[[Any], str] | None) -> _RefusalCount | None:
        if model_of is None:
            return None
        count_refused = self.count_refused

        def count(request: Any) -> None:
            if not counted_in_call():
                count_refused(_model_named(model_of, request))

        return count


def _model_named(model_of: Callable[[Any], str], request: Any) -> str:
    try:
        name = model_of(request)
    except Exception:  # noqa: BLE001 - a malformed message names no model
        return ""
    return name if isinstance(name, str) else ""


def scoped_handler(
    handler: grpc.RpcMethodHandler, protocol: str, opener: ScopeOpener, refused: _RefusalCount | None
) -> grpc.RpcMethodHandler:
    """The same handler with its behaviour run inside a scope; streams keep theirs to the end.

    A unary inference method (``refused`` given) that fails uncounted counts as a refusal.
    """
    if not hasattr(handler, "_replace"):  # not grpc's own namedtuple: leave it as it is
        return handler
    if handler.unary_unary is not None:
        unary = handler.unary_unary
        guarded = guarded_of(unary)
        if guarded is not None:
            return handler._replace(unary_unary=_guarded_in_scope(guarded, protocol, opener, refused))

        async def scoped_unary(request: object, context: grpc.aio.ServicerContext) -> object:
            scope = opener.open(protocol, _metadata, context)
            token = current_scope.set(scope)
            try:
                return await unary(request, context)
            except asyncio.CancelledError:
                raise  # the client left or its deadline passed: the dataplane counts that
            except BaseException:  # an abort (grpc_guard turns every error into one)
                if refused is not None:
                    refused(request)
                raise
            finally:
                current_scope.reset(token)
                if scope.observed:  # a quiet scope (nobody observes) has nothing to close
                    opener.close(scope)

        return handler._replace(unary_unary=scoped_unary)
    for kind in ("unary_stream", "stream_unary", "stream_stream"):
        behaviour = getattr(handler, kind)
        if behaviour is not None:
            return handler._replace(**{kind: _scoped_stream(behaviour, protocol, opener)})
    return handler


def _guarded_in_scope(
    guarded: Guarded, protocol: str, opener: ScopeOpener, refused: _RefusalCount | None
) -> Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]:
    """A ``grpc_guard``ed handler in its scope, the guard's work done here: what the two
    wrappers did, nested, in one coroutine (each coroutine is a frame and an await on
    every call of the hottest methods, docs/performance.md)."""
    handler, method, internal_prefix = guarded.handler, guarded.method, guarded.internal_prefix

    async def guarded_in_scope(request: object, context: grpc.aio.ServicerContext) -> object:
        scope = opener.open(protocol, _metadata, context)
        token = current_scope.set(scope)
        try:
            remaining = context.time_remaining()
            if remaining is None:  # no deadline (most calls): no context manager to enter
                return await handler(request, context)
            with transport_deadline(remaining, GRPC_DEADLINE):
                return await handler(request, context)
        except asyncio.CancelledError:
            raise  # the client left or its deadline passed: the dataplane counts that
        except Exception as error:
            if refused is not None:
                refused(request)
            if isinstance(error, grpc.aio.AbortError):  # the handler's own abort
                raise
            code, message = failure_status(error, method, internal_prefix)
            await context.abort(code, message)
            raise  # not reached: abort ends the call by raising
        except BaseException:
            if refused is not None:
                refused(request)
            raise
        finally:
            current_scope.reset(token)
            if scope.observed:  # a quiet scope (nobody observes) has nothing to close
                opener.close(scope)

    return guarded_in_scope


def _scoped_stream(behaviour: Callable[..., Any], protocol: str, opener: ScopeOpener) -> Callable[..., Any]:
    """A streaming behaviour counted under ``protocol``, as async as the one it wraps
    (grpc.aio runs a plain function on a thread). A stream may carry many
    requests: each is counted; streams are not traced."""
    if inspect.isasyncgenfunction(behaviour):

        async def scoped_generator(request: object, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            current_scope.set(opener.quiet(protocol))
            async for response in behaviour(request, context):
                yield response

        return scoped_generator

    async def scoped_coroutine(request: object, context: grpc.aio.ServicerContext) -> Any:
        current_scope.set(opener.quiet(protocol))
        return await behaviour(request, context)

    return scoped_coroutine


def _metadata(context: grpc.aio.ServicerContext) -> dict[str, str]:
    return {key: value for key, value in context.invocation_metadata() or () if isinstance(value, str)}
