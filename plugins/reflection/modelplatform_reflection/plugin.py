"""Hook implementations of the ``reflection`` plugin."""

from __future__ import annotations

from collections.abc import Sequence

from modelplatform import GrpcService, Option, Settings, hookimpl

from .options import OPTIONS, enabled
from .service import METHOD, V1, V1ALPHA, add_v1, add_v1alpha

#: Reflection describes the API: the category the OpenAPI documents and docs page share.
CATEGORIES = {METHOD: "docs"}


@hookimpl
def register_options() -> Sequence[Option]:
    return OPTIONS


@hookimpl
def register_grpc_services(settings: Settings) -> list[GrpcService]:
    if not enabled(settings):
        return []
    return [
        GrpcService(V1, add_v1, protocol="reflection", categories=CATEGORIES),
        GrpcService(V1ALPHA, add_v1alpha, protocol="reflection", categories=CATEGORIES),
    ]
