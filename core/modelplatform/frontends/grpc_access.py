"""Restricted protocols and API keys on the gRPC port: a guard around every handler.

Each call's method names its API category (GrpcService.categories). The
guard (wrapped around each handler once, at registration: grpc_server.py)
asks the server's AccessGate before the handler runs and answers
as Triton does: a restricted protocol without its metadata
(``triton-grpc-protocol-<key>``) ends UNAVAILABLE "This protocol is restricted,
expecting header '...'"; no or an unknown key UNAUTHENTICATED; a key outside
its categories or models PERMISSION_DENIED. Wrapped outside the request
scope, so a refused call is neither traced nor counted.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import grpc
import structlog

from modelplatform.base.access.categories import INFERENCE, check_category
from modelplatform.frontends.gate import AccessGate, DenialKind, Verdict, access_gate, admitted

if TYPE_CHECKING:
    from modelplatform.dataplane.context import ServerContext
    from modelplatform.dataplane.declarations import GrpcService

log = structlog.get_logger("modelplatform.base.access")

_STATUS = {
    DenialKind.RESTRICTED: grpc.StatusCode.UNAVAILABLE,  # Triton's answer for a restricted protocol
    DenialKind.UNAUTHENTICATED: grpc.StatusCode.UNAUTHENTICATED,
    DenialKind.FORBIDDEN: grpc.StatusCode.PERMISSION_DENIED,
}
#: Reads the model a request message names (None: it names none; "": it cannot say).
ModelReader = Callable[[Any], "str | None"]


def access_guard(context: ServerContext) -> AccessGuard | None:
    """The guard when anything is checked on gRPC; None otherwise (no cost per call)."""
    check_categories(context.grpc_services)
    gate = access_gate(context)
    if not gate.grpc_active:
        return None
    methods = {
        f"/{service.name}/{method}": (category, _model_reader(service.inference_methods.get(method), category))
        for service in context.grpc_services
        for method, category in service.categories.items()
    }  # fmt: skip
    return AccessGuard(gate, methods)


def check_categories(services: Iterable[GrpcService]) -> None:
    """Every category a service declares is known (PluginError stops start-up otherwise)."""
    for service in services:
        for method, category in service.categories.items():
            check_category(category, f"gRPC method /{service.name}/{method}")


def _model_reader(inference: Callable[[Any], str] | None, category: str) -> ModelReader:
    if inference is not None:
        return lambda request: _read(inference, request)
    if category == INFERENCE:  # a model the interceptor cannot read: model-limited keys are refused
        return lambda request: ""
    return _named_model


def _read(model_of: Callable[[Any], str], request: Any) -> str:
    try:
        name = model_of(request)
    except Exception:  # noqa: BLE001 - a malformed message names no model we can allow
        return ""
    return name if isinstance(name, str) else ""


def _named_model(request: Any) -> str | None:
    """``model_name`` (OIP, repository, trace) or ``model_spec.name`` (TF Serving); empty: none."""
    for read in (lambda: request.model_name, lambda: request.model_spec.name):
        try:
            name = read()
        except AttributeError:
            continue
        return name if isinstance(name, str) and name else None
    return None


class AccessGuard:
    """Wraps a handler with the gate's check, once per method at registration."""

    def __init__(self, gate: AccessGate, methods: Mapping[str, tuple[str, ModelReader]]) -> None:
        self._gate = gate
        self._methods = methods

    def wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        """``handler`` of ``method`` (``/package.Service/Method``) behind the check."""
        if handler is None or not hasattr(handler, "_replace"):
            return handler
        # A method no declaration names has no category: with API keys, no key may call it.
        category, reader = self._methods.get(method, ("", _named_model))
        return self._guarded(handler, method, category, reader)

    def _guarded(
        self, handler: grpc.RpcMethodHandler, method: str, category: str, reader: ModelReader
    ) -> grpc.RpcMethodHandler:
        check = _Check(self._gate, method, category)
        if handler.unary_unary is not None:
            return handler._replace(unary_unary=_guarded_unary(handler.unary_unary, check, reader))
        if handler.unary_stream is not None:
            return handler._replace(unary_stream=_guarded_stream(handler.unary_stream, check, reader))
        # A stream of requests: the call is checked as it opens, each message's model as it arrives.
        each = _message_model if category == INFERENCE else _named_model
        for kind in ("stream_unary", "stream_stream"):
            behaviour = getattr(handler, kind)
            if behaviour is not None:
                return handler._replace(**{kind: _guarded_requests(behaviour, check, each)})
        return handler


class _Check:
    """One method's check: the verdict for a call, its refusal raised as the call's status."""

    __slots__ = ("gate", "method", "category")

    def __init__(self, gate: AccessGate, method: str, category: str) -> None:
        self.gate, self.method, self.category = gate, method, category

    async def verdict(self, context: grpc.aio.ServicerContext, model: str | None) -> Verdict:
        verdict = self.gate.check_grpc(self.category, model, _metadata(context))
        denial = verdict.denial
        if denial is not None:
            log.info("request_refused", method=self.method, category=self.category,
                     reason=denial.kind.value, api_key=denial.key_name or None)  # fmt: skip
            await context.abort(_STATUS[denial.kind], denial.message)
        return verdict


def _guarded_unary(unary: Callable[..., Any], check: _Check, reader: ModelReader) -> Callable[..., Any]:
    async def guarded(request: Any, context: grpc.aio.ServicerContext) -> Any:
        verdict = await check.verdict(context, reader(request))
        with admitted(verdict):
            return await unary(request, context)

    return guarded


def _guarded_stream(behaviour: Callable[..., Any], check: _Check, reader: ModelReader) -> Callable[..., Any]:
    """As async as the behaviour it wraps (grpc.aio runs a plain function on a thread)."""
    if inspect.isasyncgenfunction(behaviour):

        async def guarded_generator(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            verdict = await check.verdict(context, reader(request))
            with admitted(verdict):
                async for response in behaviour(request, context):
                    yield response

        return guarded_generator

    async def guarded_coroutine(request: Any, context: grpc.aio.ServicerContext) -> Any:
        verdict = await check.verdict(context, reader(request))
        with admitted(verdict):
            return await behaviour(request, context)

    return guarded_coroutine


def _guarded_requests(
    behaviour: Callable[..., Any], check: _Check, reader: ModelReader
) -> Callable[..., Any]:
    """A behaviour taking a stream of requests: the call's category and key are checked
    when it opens; with API keys, each message's model before the behaviour sees it."""

    def checked(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        return requests if check.gate.keys is None else _each_checked(requests, context, check, reader)

    if inspect.isasyncgenfunction(behaviour):

        async def guarded_generator(requests: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            verdict = await check.verdict(context, None)
            with admitted(verdict):
                async for response in behaviour(checked(requests, context), context):
                    yield response

        return guarded_generator

    async def guarded_coroutine(requests: Any, context: grpc.aio.ServicerContext) -> Any:
        verdict = await check.verdict(context, None)
        with admitted(verdict):
            return await behaviour(checked(requests, context), context)

    return guarded_coroutine


async def _each_checked(
    requests: AsyncIterator[Any], context: grpc.aio.ServicerContext, check: _Check, reader: ModelReader
) -> AsyncIterator[Any]:
    """The stream's messages; one outside the key's models ends the call (PERMISSION_DENIED)."""
    async for request in requests:
        verdict = await check.verdict(context, reader(request))
        if verdict.deferred is not None:  # no handler call is scoped to one message: refuse it
            message = f"API key '{verdict.key_name}' is limited to named models; this message names none"
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, message)
        yield request


def _message_model(request: Any) -> str:
    """An inference message's model; "" when it names none (refused to keys limited to models)."""
    return _named_model(request) or ""


def _metadata(context: grpc.aio.ServicerContext) -> dict[str, str]:
    pairs = context.invocation_metadata() or ()
    return {key.lower(): value for key, value in pairs if isinstance(value, str)}
