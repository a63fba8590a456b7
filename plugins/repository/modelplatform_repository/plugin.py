"""Hook implementations of the ``repository`` plugin (Model Repository Extension)."""

from __future__ import annotations

from collections.abc import Sequence

from modelplatform import GrpcService, HttpDialect, Option, Settings, hookimpl
from modelplatform_oip.api import http_status

from . import rest, rpc
from .options import OPTIONS

EXTENSIONS = ("model_repository", "model_repository(unload_dependents)")


@hookimpl
def register_options() -> Sequence[Option]:
    return OPTIONS


@hookimpl
def register_http_dialects(settings: Settings) -> list[HttpDialect]:
    return [HttpDialect(rest.DIALECT, rest.repository_routes, http_status, extensions=EXTENSIONS)]


@hookimpl
def register_grpc_services(settings: Settings) -> list[GrpcService]:
    methods = ("RepositoryIndex", "RepositoryModelLoad", "RepositoryModelUnload")
    return [GrpcService(rpc.SERVICE, rpc.add_to_server, extensions=EXTENSIONS,
                        categories=dict.fromkeys(methods, rest.CATEGORY))]  # fmt: skip
