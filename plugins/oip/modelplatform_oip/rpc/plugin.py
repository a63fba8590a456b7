"""Hook implementations of the ``oip-grpc`` plugin."""

from __future__ import annotations

from modelplatform import GrpcService, Settings, hookimpl

from . import health, service

CATEGORIES = {
    "ServerLive": "health", "ServerReady": "health", "ModelReady": "health",
    "ServerMetadata": "metadata", "ModelMetadata": "metadata",
    "ModelInfer": "inference", "ModelStreamInfer": "inference",
    "ModelConfig": "model-config", "ModelStatistics": "statistics", "LogSettings": "logging",
}  # fmt: skip
HEALTH_CATEGORIES = dict.fromkeys(("Check", "Watch", "List"), "health")


@hookimpl
def register_grpc_services(settings: Settings) -> list[GrpcService]:
    return [
        GrpcService(
            service.SERVICE,
            service.add_to_server,
            extensions=(
                "classification",
                "schedule_policy",
                "sequence",
                "model_configuration",
                "statistics",
                "logging",
            ),
            protocol="oip_grpc",
            inference_methods={"ModelInfer": service.model_named},
            categories=CATEGORIES,
        ),
        GrpcService(health.HEALTH_SERVICE, health.add_to_server, categories=HEALTH_CATEGORIES),
    ]
