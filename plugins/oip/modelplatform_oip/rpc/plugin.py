"""Hook implementations of the ``oip-grpc`` plugin."""

from __future__ import annotations

from modelplatform import GrpcService, Settings, hookimpl

from . import health, service


@hookimpl
def register_grpc_services(settings: Settings) -> list[GrpcService]:
    return [
        GrpcService(
            service.SERVICE,
            service.add_to_server,
            extensions=("model_configuration", "statistics", "logging"),
            protocol="oip_grpc",
            inference_methods={"ModelInfer": service.model_named},
        ),
        GrpcService(health.HEALTH_SERVICE, health.add_to_server),
    ]
