"""``grpc.health.v1.Health``: SERVING while the dataplane is ready.

Check answers for the whole server (``""``) and for the inference service
by name; readiness is read on every call, so model loads and unloads show
up at once. Watch is left unimplemented.
"""

from __future__ import annotations

from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from modelplatform import DataPlane, ServerContext

from .service import SERVICE

HEALTH_SERVICE = "grpc.health.v1.Health"
_KNOWN = frozenset({"", SERVICE})
_Status = health_pb2.HealthCheckResponse


class Health(health_pb2_grpc.HealthServicer):  # type: ignore[misc]  # grpc_health has no types: its base is Any
    def __init__(self, dataplane: DataPlane) -> None:
        self.ready = dataplane.health.ready

    async def Check(self, request: health_pb2.HealthCheckRequest, context: Any) -> Any:
        if request.service not in _KNOWN:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service '{request.service}'")
        serving = self.ready()
        return _Status(status=_Status.SERVING if serving else _Status.NOT_SERVING)

    async def Watch(self, request: health_pb2.HealthCheckRequest, context: Any) -> None:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "Watch is not supported; poll Check")


def add_to_server(server: grpc.aio.Server, context: ServerContext) -> None:
    health_pb2_grpc.add_HealthServicer_to_server(Health(context.dataplane), server)
