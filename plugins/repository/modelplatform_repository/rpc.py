"""RepositoryIndex / RepositoryModelLoad / RepositoryModelUnload over gRPC.

Served as part of ``inference.GRPCInferenceService`` through this plugin's
own generic handler, beside the oip-grpc plugin's handler for the other
methods of the same service. Messages, the service name and the
unary handler come from modelplatform-oip's extension API; errors become
statuses through the core's one gRPC table. Restrictions and API keys are
checked by the core's interceptor before a handler runs.
"""

from __future__ import annotations

from typing import Any

import grpc

from modelplatform import InvalidArgument, ServerContext
from modelplatform_oip.api import GRPC_SERVICE, unary_method
from modelplatform_oip.api import grpc_messages as pb

from .operations import LoadParameters, RepositoryOperations
from .uploads import FILE_PREFIX

SERVICE = GRPC_SERVICE


def load_parameters(params: Any) -> LoadParameters:
    """``config`` must be a string_param, each ``file:`` a bytes_param (raw content)."""
    config = None
    if "config" in params:
        if params["config"].WhichOneof("parameter_choice") != "string_param":
            raise InvalidArgument("load parameter 'config' must be a string_param")
        config = params["config"].string_param
    files = {}
    for key, value in params.items():
        if key.startswith(FILE_PREFIX):
            if value.WhichOneof("parameter_choice") != "bytes_param":
                raise InvalidArgument(f"load parameter '{key}' must be a bytes_param")
            files[key] = value.bytes_param
    return LoadParameters(config, files)


def _check_unload(params: Any) -> bool:
    if "unload_dependents" not in params:
        return False
    if params["unload_dependents"].WhichOneof("parameter_choice") != "bool_param":
        raise InvalidArgument("unload parameter 'unload_dependents' must be a bool_param")
    return bool(params["unload_dependents"].bool_param)


class RepositoryService:
    def __init__(self, context: ServerContext) -> None:
        self.ops = RepositoryOperations(context)

    def _admit(self, context: grpc.aio.ServicerContext, repo: str) -> None:
        self.ops.check_repository(repo)

    async def index(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self._admit(context, request.repository_name)
        models = [
            pb.RepositoryIndexResponse.ModelIndex(
                name=e.name, version=e.version, state=e.state, reason=e.reason
            )
            for e in await self.ops.index(request.ready)
        ]
        return pb.RepositoryIndexResponse(models=models)

    async def load(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self._admit(context, request.repository_name)
        await self.ops.load(request.model_name, load_parameters(request.parameters))
        return pb.RepositoryModelLoadResponse()

    async def unload(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self._admit(context, request.repository_name)
        dependents = _check_unload(request.parameters)
        await self.ops.unload(request.model_name, dependents)
        return pb.RepositoryModelUnloadResponse()


def add_to_server(server: grpc.aio.Server, context: ServerContext) -> None:
    service = RepositoryService(context)
    handlers = {
        "RepositoryIndex": unary_method(service.index, pb.RepositoryIndexRequest, pb.RepositoryIndexResponse),
        "RepositoryModelLoad": unary_method(
            service.load, pb.RepositoryModelLoadRequest, pb.RepositoryModelLoadResponse
        ),
        "RepositoryModelUnload": unary_method(
            service.unload, pb.RepositoryModelUnloadRequest, pb.RepositoryModelUnloadResponse
        ),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
