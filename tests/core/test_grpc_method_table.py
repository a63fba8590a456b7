"""Every tabled gRPC method is served from one table, and none as a grpc registered method.

grpc.aio's serving loop keeps one pending request per registered method and
waits on all of them for every call it accepts (docs/performance.md measures
what 40 of them cost); the registrar keeps that number at zero.
"""

from __future__ import annotations

from typing import Any

import grpc

from modelplatform.base.observing import ScopeOpener
from modelplatform.frontends.grpc_scopes import Refusals, ScopeWrapper
from modelplatform.frontends.grpc_server import _Registrar


class RecordingServer:
    """Stands in for grpc.aio.Server: keeps what the registrar hands it."""

    def __init__(self) -> None:
        self.generic: list[Any] = []
        self.registered: list[str] = []

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        self.generic.extend(handlers)

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        self.registered.append(service)


class Details:
    def __init__(self, method: str) -> None:
        self.method = method
        self.invocation_metadata = ()


def answer(text: str) -> grpc.RpcMethodHandler:
    async def behaviour(request: bytes, context: Any) -> bytes:
        return text.encode()

    return grpc.unary_unary_rpc_method_handler(behaviour)


class OneMethod(grpc.GenericRpcHandler):
    """A generic handler that is not a method table: looked up per call."""

    def service(self, details: Any) -> grpc.RpcMethodHandler | None:
        return answer("generic") if details.method == "/other.Service/Call" else None


def registrar() -> tuple[_Registrar, RecordingServer]:
    server = RecordingServer()
    wrapper = ScopeWrapper({}, ScopeOpener(()), Refusals(lambda name: None, {}))
    return _Registrar(server, wrapper, None), server  # type: ignore[arg-type]  # the stand-in


def lookup(server: RecordingServer, method: str) -> grpc.RpcMethodHandler | None:
    """What grpc.aio would serve ``method`` with: the first generic handler that answers."""
    for generic in server.generic:
        handler = generic.service(Details(method))
        if handler is not None:
            return handler
    return None


def test_tables_from_either_registration_land_in_one_table_and_none_is_registered() -> None:
    table_registrar, server = registrar()
    first, second = answer("first"), answer("second")
    table_registrar.add_registered_method_handlers("a.Service", {"Call": first})
    table_registrar.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("b.Service", {"Call": second}),)
    )
    table_registrar.add_generic_rpc_handlers((OneMethod(),))
    assert server.registered == []
    assert len(server.generic) == 2  # the table, then the handler that is no table
    assert lookup(server, "/a.Service/Call") is first
    assert lookup(server, "/b.Service/Call") is second
    assert lookup(server, "/other.Service/Call") is not None
    assert lookup(server, "/a.Service/Missing") is None


def test_the_first_registration_of_a_method_wins() -> None:
    table_registrar, server = registrar()
    first = answer("first")
    table_registrar.add_registered_method_handlers("a.Service", {"Call": first})
    table_registrar.add_registered_method_handlers("a.Service", {"Call": answer("later")})
    assert lookup(server, "/a.Service/Call") is first


def test_the_real_server_answers_unknown_methods_unimplemented_and_keeps_serving(server: Any) -> None:
    from modelplatform_oip.protos import grpc_service_pb2 as pb

    with grpc.insecure_channel(server.grpc_url) as channel:
        for method in ("/inference.GRPCInferenceService/NoSuchMethod", "/no.such.Service/Call"):
            call = channel.unary_unary(method, request_serializer=None, response_deserializer=None)
            try:
                call(b"", timeout=10)
            except grpc.RpcError as refused:
                assert refused.code() == grpc.StatusCode.UNIMPLEMENTED
            else:
                raise AssertionError(f"{method} answered")
        live = channel.unary_unary(
            "/inference.GRPCInferenceService/ServerLive",
            request_serializer=pb.ServerLiveRequest.SerializeToString,
            response_deserializer=pb.ServerLiveResponse.FromString,
        )
        assert live(pb.ServerLiveRequest(), timeout=10).live is True
