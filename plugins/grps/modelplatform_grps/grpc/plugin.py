"""Hook implementations of the ``grps-grpc`` plugin."""

from __future__ import annotations

from collections.abc import Sequence

from modelplatform import GrpcService, Option, Settings, hookimpl

from ..options import OPTIONS
from .servicer import SERVICE, add_to_server

#: Online/Offline change what the server serves: admin, not health.
CATEGORIES = {
    "Predict": "inference", "PredictStreaming": "inference",
    "Online": "admin", "Offline": "admin",
    "CheckLiveness": "health", "CheckReadiness": "health",
    "ServerMetadata": "metadata", "ModelMetadata": "metadata",
}  # fmt: skip


@hookimpl
def register_grpc_services(settings: Settings) -> list[GrpcService]:
    return [GrpcService(SERVICE, add_to_server, protocol="grps_grpc", categories=CATEGORIES)]


@hookimpl
def register_options() -> Sequence[Option]:
    # The same declarations as the other grps transport's: one [plugins.grps] table (options.py).
    return OPTIONS
