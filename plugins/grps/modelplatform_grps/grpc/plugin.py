"""Hook implementations of the ``grps-grpc`` plugin."""

from __future__ import annotations

from modelplatform import GrpcService, Settings, hookimpl

from .servicer import SERVICE, add_to_server


@hookimpl
def register_grpc_services(settings: Settings) -> list[GrpcService]:
    return [GrpcService(SERVICE, add_to_server, protocol="grps_grpc")]
