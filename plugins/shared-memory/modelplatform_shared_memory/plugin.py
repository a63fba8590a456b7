"""Hook implementations of the ``shared-memory`` plugin (Triton's shared-memory extensions).

One registry per server: the codec the oip transports resolve region
parameters through, the HTTP routes and the gRPC methods all share it. The
codec is registered only while client shared memory is enabled
(``--allow-client-shm``); the routes always are, answering as Triton does
when it is off. The registry is created with the codec (or, with the codec
off, with the routes) and reached through the server's context: two servers
in one process never share regions.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from modelplatform import Codec, GrpcService, HttpDialect, Option, ServerContext, Settings, hookimpl
from modelplatform_oip.api import REGION_CODEC, REGIONS_DIALECT, http_status

from . import cuda, rest, rpc
from .codec import SharedMemoryCodec
from .operations import SharedMemoryOperations
from .options import OPTIONS, SharedMemoryOptions
from .registry import RegionRegistry


class SharedMemory:
    """The plugin's state for one server, made once per server by :func:`state_of`."""

    def __init__(self, context: ServerContext) -> None:
        settings = context.settings
        self.options = SharedMemoryOptions.from_settings(settings)
        codec = context.codecs.get(REGIONS_DIALECT, REGION_CODEC)
        # While client shared memory is allowed, this server's codec holds its registry.
        if isinstance(codec, SharedMemoryCodec):
            self.registry = codec.registry
        else:
            self.registry = RegionRegistry(self.options.max_shm_regions)
        self.operations = SharedMemoryOperations(self.registry, self.options.allow_client_shm, _gpu(settings))


def state_of(context: ServerContext) -> SharedMemory:
    """The server's one :class:`SharedMemory`: what its routes, gRPC methods and hooks share."""
    return context.shared(SharedMemory, lambda: SharedMemory(context))


@functools.cache
def _cuda_support() -> cuda.CudaSupport | None:
    """Process-wide on purpose: whether pycuda sees a device is a fact of the machine, not of a server."""
    return cuda.probe()


def _allowed(settings: Settings) -> bool:
    return SharedMemoryOptions.from_settings(settings).allow_client_shm


def _gpu(settings: Settings) -> cuda.CudaSupport | None:
    return _cuda_support() if _allowed(settings) else None


def _extensions(settings: Settings) -> tuple[str, ...]:
    if not _allowed(settings):
        return ()
    return ("system_shared_memory",) + (("cuda_shared_memory",) if _gpu(settings) else ())


@hookimpl
def register_options() -> Sequence[Option]:
    return OPTIONS


@hookimpl
def register_codecs(settings: Settings) -> list[Codec]:
    options = SharedMemoryOptions.from_settings(settings)
    if not options.allow_client_shm:
        return []
    return [SharedMemoryCodec(RegionRegistry(options.max_shm_regions))]


@hookimpl
def register_http_dialects(settings: Settings) -> list[HttpDialect]:
    return [
        HttpDialect(
            rest.DIALECT,
            lambda context: rest.shared_memory_routes(state_of(context).operations),
            http_status,
            extensions=_extensions(settings),
            protocol="oip_http",
        )
    ]


@hookimpl
def register_grpc_services(settings: Settings) -> list[GrpcService]:
    def add_to_server(server: Any, context: ServerContext) -> None:
        server.add_generic_rpc_handlers((rpc.handler(state_of(context).operations),))

    methods = [
        f"{kind}SharedMemory{verb}"
        for kind in ("System", "Cuda")
        for verb in ("Status", "Register", "Unregister")
    ]
    return [
        GrpcService(
            rpc.SERVICE,
            add_to_server,
            extensions=_extensions(settings),
            protocol="oip_grpc",
            categories=dict.fromkeys(methods, rest.CATEGORY),
        )
    ]


@hookimpl
def startup(server: ServerContext) -> None:
    state_of(server).operations.share_with_siblings(server.broadcast)


@hookimpl
def shutdown(server: ServerContext) -> None:
    state = state_of(server)
    state.registry.remove("system")
    state.registry.remove("cuda")
