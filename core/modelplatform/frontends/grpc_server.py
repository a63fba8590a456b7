"""The grpc.aio server: one port for every plugin's gRPC services.

It is created inside the running event loop (grpc.aio binds to it), the same
loop Sanic serves on, so HTTP and gRPC requests meet in the same schedulers.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import grpc
import structlog

from modelplatform.base.deadlines import transport_deadline
from modelplatform.base.errors import ErrorCode, ModelPlatformError
from modelplatform.base.observing import ScopeOpener, counted_in_call, current_scope
from modelplatform.frontends.grpc_access import AccessGuard, access_guard
from modelplatform.frontends.tls import mode_of, server_tls

if TYPE_CHECKING:
    from modelplatform.dataplane.context import ServerContext
    from modelplatform.frontends.tls import ListenerTls, Pem

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
            code, message = _failure_status(error, method, internal_prefix)
            await context.abort(code, message)
            raise  # not reached: abort ends the call by raising

    return guarded


def _failure_status(error: Exception, method: str, internal_prefix: str) -> tuple[grpc.StatusCode, str]:
    """The status a failed call answers with; logs what the dataplane has not logged yet."""
    if isinstance(error, ModelPlatformError):
        if not error.logged:  # refused before the dataplane saw it (decoding, access checks)
            log.info("request_failed", method=method, code=error.code.value, error=error.message)
            error.logged = True
        return grpc_status(error), error.message
    log.error("request_failed", method=method, error=type(error).__name__, exc_info=error)
    return grpc.StatusCode.INTERNAL, f"{internal_prefix}: {type(error).__name__}"


INT32_MAX = 2**31 - 1


def server_options(max_message_bytes: int, reuse_port: bool = False) -> list[tuple[str, int]]:
    """Port sharing only for ``--workers N``: a lone server must not silently share its port."""
    limit = INT32_MAX if max_message_bytes < 0 else max_message_bytes
    return [
        ("grpc.max_receive_message_length", limit),
        ("grpc.max_send_message_length", limit),
        ("grpc.so_reuseport", int(reuse_port)),
    ]


async def start_grpc_server(context: ServerContext, address: str | None = None) -> grpc.aio.Server | None:
    """Start the server if any plugin registered a service; returns it or None.

    ``address`` replaces ``host:grpc_port`` (``--single-port``: a private Unix socket).
    """
    if not context.grpc_services:
        return None
    settings = context.settings
    options = server_options(settings.grpc_max_message_bytes, settings.workers > 1)
    protocols = {s.name: s.protocol or s.name for s in context.grpc_services}
    refusals = _Refusals(context.dataplane.inference.count_refused, {
        f"/{s.name}/{method}": model_of
        for s in context.grpc_services for method, model_of in s.inference_methods.items()
    })  # fmt: skip
    wrapper = _ScopeWrapper(protocols, ScopeOpener(context.dataplane.observation.observers), refusals)
    server = grpc.aio.server(options=options)
    registrar = _Registrar(server, wrapper, access_guard(context))
    for service in context.grpc_services:
        service.add_to_server(registrar, context)
    # --single-port hands this server a private socket behind the one port (plain text there).
    tls = None if address else server_tls(context).listener("grpc")
    address = address or f"{settings.host}:{settings.grpc_port}"
    if tls is None:
        bound = server.add_insecure_port(address)
    else:
        bound = server.add_secure_port(address, server_credentials(tls))
    if bound == 0:
        raise OSError(f"cannot bind gRPC to {address}")
    await server.start()
    services = sorted({s.name for s in context.grpc_services})
    log.info("grpc_started", address=address, services=services, tls=mode_of(tls))
    return server


def server_credentials(tls: ListenerTls) -> grpc.ServerCredentials:
    """Credentials that follow ``tls``: gRPC asks the fetcher on each new handshake, and it
    answers with the files' latest good bytes once per reload (None: nothing new)."""
    used = tls.generation

    def certificates(pem: Pem) -> grpc.ServerCertificateConfiguration:
        return grpc.ssl_server_certificate_configuration([(pem.key, pem.cert)], root_certificates=pem.root)

    def fetch() -> grpc.ServerCertificateConfiguration | None:
        nonlocal used
        if tls.generation == used:
            return None
        used = tls.generation
        return certificates(tls.pem)

    return grpc.dynamic_ssl_server_credentials(
        certificates(tls.pem), fetch, require_client_authentication=tls.files.mutual
    )


class _ScopeWrapper:
    """Runs every handler inside a request scope (observing.py) named by its service's protocol.

    The behaviour itself is wrapped, so the scope is set in the call's own task
    (the dataplane and a direct scheduler read it there). Handlers of services
    no plugin declared (reflection) stay as they are.
    """

    def __init__(self, protocols: dict[str, str], opener: ScopeOpener, refusals: _Refusals) -> None:
        self._protocols = protocols
        self._opener = opener
        self._refusals = refusals

    def wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        """``handler`` of ``method`` (``/package.Service/Method``) wrapped once, at start-up."""
        protocol = self._protocols.get(method.lstrip("/").partition("/")[0])
        if handler is None or protocol is None:
            return handler
        model_of = self._refusals.models.get(method)
        return _scoped_handler(handler, protocol, self._opener, self._refusals.counter(model_of))


class _Registrar:
    """What ``GrpcService.add_to_server`` receives in place of the server: it wraps handlers as
    they are registered, not per call as an interceptor would (grpc.aio runs interceptors
    and the generic handlers' Python lookups on every call).

    Every method of a method table (``grpc.method_handlers_generic_handler``, or
    ``add_registered_method_handlers``) lands in one table that grpc asks first
    (:class:`_MethodTable`: one dict lookup per call); any other generic handler
    is looked up after it, per call, then wrapped. None becomes a grpc
    *registered* method: grpc.aio's serving loop keeps one pending request per
    registered method and passes them all to ``asyncio.wait`` for every call it
    accepts (40 methods here cost about 12 µs of the loop per call, measured in
    docs/performance.md).
    """

    def __init__(self, server: grpc.aio.Server, wrapper: _ScopeWrapper, guard: AccessGuard | None) -> None:
        self._server = server
        self._wrapper = wrapper
        self._guard = guard
        self._table = _MethodTable()
        server.add_generic_rpc_handlers((self._table,))

    def wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        """In its request scope, then behind the access check (when configured): a refused call
        never reaches the scope, so it is neither traced nor counted."""
        scoped = self._wrapper.wrap(method, handler)
        return scoped if self._guard is None else self._guard.wrap(method, scoped)

    def add_registered_method_handlers(
        self, service: str, handlers: dict[str, grpc.RpcMethodHandler]
    ) -> None:
        for name, handler in handlers.items():
            method = f"/{service}/{name}"
            self._table.add(method, self.wrap(method, handler))

    def add_generic_rpc_handlers(self, generic_handlers: Any) -> None:
        for generic in generic_handlers:
            table = _method_table(generic)
            if table is not None:
                self.add_registered_method_handlers(*table)
            else:
                self._server.add_generic_rpc_handlers((_WrappedGeneric(generic, self.wrap),))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._server, name)  # ports and the rest: the server's own


class _MethodTable(grpc.GenericRpcHandler):  # type: ignore[misc]  # grpcio has no types: its base is Any
    """Every tabled method's wrapped handler by its full name; the first registration wins,
    as grpc's own lookup would answer."""

    def __init__(self) -> None:
        self._handlers: dict[str, grpc.RpcMethodHandler] = {}

    def add(self, method: str, handler: grpc.RpcMethodHandler) -> None:
        self._handlers.setdefault(method, handler)

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        return self._handlers.get(details.method)


def _method_table(generic: Any) -> tuple[str, dict[str, grpc.RpcMethodHandler]] | None:
    """(service, {method name: handler}) of a method_handlers_generic_handler, else None."""
    service = getattr(generic, "_name", None)
    table = getattr(generic, "_method_handlers", None)
    if not isinstance(service, str) or not isinstance(table, dict):
        return None
    prefix = f"/{service}/"
    if not all(isinstance(key, str) and key.startswith(prefix) for key in table):
        return None
    return service, {key[len(prefix) :]: handler for key, handler in table.items()}


class _WrappedGeneric(grpc.GenericRpcHandler):  # type: ignore[misc]  # grpcio has no types: its base is Any
    """A generic handler whose answers are wrapped (once per method, then reused)."""

    def __init__(
        self,
        generic: grpc.GenericRpcHandler,
        wrap: Callable[[str, grpc.RpcMethodHandler], grpc.RpcMethodHandler],
    ) -> None:
        self._generic = generic
        self._wrap = wrap
        self._wrapped: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        handler = self._generic.service(details)
        if handler is None:
            return None
        known = self._wrapped.get(details.method)
        if known is None or known[0] is not handler:
            known = self._wrapped[details.method] = (handler, self._wrap(details.method, handler))
        return known[1]


#: Counts a refused call of an inference method: (its request message) -> None.
_RefusalCount = Callable[[Any], None]


class _Refusals:
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


def _scoped_handler(
    handler: grpc.RpcMethodHandler, protocol: str, opener: ScopeOpener, refused: _RefusalCount | None
) -> grpc.RpcMethodHandler:
    """The same handler with its behaviour run inside a scope; streams keep theirs to the end.

    A unary inference method (``refused`` given) that fails uncounted counts as a refusal.
    """
    if not hasattr(handler, "_replace"):  # not grpc's own namedtuple: leave it as it is
        return handler
    if handler.unary_unary is not None:
        unary = handler.unary_unary

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
