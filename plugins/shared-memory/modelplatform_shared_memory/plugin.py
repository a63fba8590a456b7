"""Hook implementations of the ``shared-memory`` plugin (Triton's shared-memory extensions).

One registry per server: the codec the oip transports resolve region
parameters through, the HTTP routes and the gRPC methods all share it. The
codec is registered only while client shared memory is enabled
(``--allow-client-shm``); the routes always are, answering as Triton does
when it is off.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from modelplatform import Codec, GrpcService, HttpDialect, Option, ServerContext, Settings, hookimpl
from modelplatform_oip.api import http_status

from . import cuda, rest, rpc
from .codec import SharedMemoryCodec
from .operations import SharedMemoryOperations
from .options import OPTIONS, SharedMemoryOptions
from .registry import RegionRegistry


class SharedMemory:
    """The plugin's state for one server (settings are known only when the hooks run)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.options = SharedMemoryOptions.from_settings(settings)
        self.registry = RegionRegistry(self.options.max_shm_regions)
        gpu = cuda.probe() if self.options.allow_client_shm else None
        self.operations = SharedMemoryOperations(self.registry, self.options.allow_client_shm, gpu)

    @property
    def extensions(self) -> tuple[str, ...]:
        if not self.options.allow_client_shm:
            return ()
        return ("system_shared_memory",) + (("cuda_shared_memory",) if self.operations.gpu else ())


_servers: dict[int, SharedMemory] = {}


def _for(settings: Settings) -> SharedMemory:
    """One state per Settings object: every hook of one server sees the same registry."""
    state = _servers.get(id(settings))
    if state is None or state.settings is not settings:
        state = _servers[id(settings)] = SharedMemory(settings)
    return state


@hookimpl
def register_options() -> Sequence[Option]:
    return OPTIONS


@hookimpl
def register_codecs(settings: Settings) -> list[Codec]:
    if not _for(settings).options.allow_client_shm:
        return []
    return [SharedMemoryCodec(_for(settings).registry)]


@hookimpl
def register_http_dialects(settings: Settings) -> list[HttpDialect]:
    state = _for(settings)
    return [
        HttpDialect(
            rest.DIALECT,
            lambda context: rest.shared_memory_routes(state.operations),
            http_status,
            extensions=state.extensions,
            protocol="oip_http",
        )
    ]


@hookimpl
def register_grpc_services(settings: Settings) -> list[GrpcService]:
    state = _for(settings)

    def add_to_server(server: Any, context: ServerContext) -> None:
        server.add_generic_rpc_handlers((rpc.handler(state.operations),))

    methods = [
        f"{kind}SharedMemory{verb}"
        for kind in ("System", "Cuda")
        for verb in ("Status", "Register", "Unregister")
    ]
    return [
        GrpcService(
            rpc.SERVICE,
            add_to_server,
            extensions=state.extensions,
            protocol="oip_grpc",
            categories=dict.fromkeys(methods, rest.CATEGORY),
        )
    ]


@hookimpl
def startup(server: ServerContext) -> None:
    _for(server.settings).operations.share_with_siblings(server.broadcast)


@hookimpl
def shutdown(server: ServerContext) -> None:
    state = _servers.pop(id(server.settings), None)
    if state is not None:
        state.registry.remove("system")
        state.registry.remove("cuda")
