"""Hook implementations of the ``tracing`` plugin.

Spans are written only with ``trace_otlp_endpoint`` set; Triton's trace
extension (``/v2[/models/{m}]/trace/setting``, gRPC ``TraceSetting``) is
served whenever the plugin is loaded, and advertised as ``trace``.
"""

from __future__ import annotations

from collections.abc import Sequence

from modelplatform import GrpcService, HttpDialect, Option, ServerContext, Settings, hookimpl
from modelplatform_oip.api import http_status

from . import rest, rpc
from .options import OPTIONS
from .tracing import tracing_of

EXTENSIONS = ("trace",)


@hookimpl
def register_options() -> Sequence[Option]:
    return OPTIONS


@hookimpl
def register_http_dialects(settings: Settings) -> list[HttpDialect]:
    dialect = HttpDialect(
        rest.DIALECT, rest.trace_routes, http_status, extensions=EXTENSIONS, protocol="oip_http"
    )
    return [dialect]


@hookimpl
def register_grpc_services(settings: Settings) -> list[GrpcService]:
    categories = {"TraceSetting": "trace"}
    service = GrpcService(
        rpc.SERVICE, rpc.add_to_server, extensions=EXTENSIONS, protocol="oip_grpc", categories=categories
    )
    return [service]


@hookimpl
async def startup(server: ServerContext) -> None:
    tracing_of(server).start()


@hookimpl
async def shutdown(server: ServerContext) -> None:
    await tracing_of(server).stop()
