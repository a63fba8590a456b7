"""The grpc.aio server: one port for every plugin's gRPC services.

It is created inside the running event loop (grpc.aio binds to it), the same
loop Sanic serves on, so HTTP and gRPC requests meet in the same schedulers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import grpc
import structlog

from modelplatform.base.observing import ScopeOpener
from modelplatform.frontends.grpc_access import AccessGuard, access_guard
from modelplatform.frontends.grpc_scopes import Refusals, ScopeWrapper
from modelplatform.frontends.tls import mode_of, server_tls

if TYPE_CHECKING:
    from modelplatform.dataplane.context import ServerContext
    from modelplatform.frontends.tls import ListenerTls, Pem

log = structlog.get_logger("modelplatform.grpc")

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
    refusals = Refusals(context.dataplane.inference.count_refused, {
        f"/{s.name}/{method}": model_of
        for s in context.grpc_services for method, model_of in s.inference_methods.items()
    })  # fmt: skip
    wrapper = ScopeWrapper(protocols, ScopeOpener(context.dataplane.observation.observers), refusals)
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

    def __init__(self, server: grpc.aio.Server, wrapper: ScopeWrapper, guard: AccessGuard | None) -> None:
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
