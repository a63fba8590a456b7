"""The grpc.aio server: one port for every plugin's gRPC services.

It is created inside the running event loop (grpc.aio binds to it), the same
loop Sanic serves on, so HTTP and gRPC requests meet in the same schedulers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import grpc
import structlog

from .errors import ErrorCode, ModelPlatformError

if TYPE_CHECKING:
    from .server import ServerContext

log = structlog.get_logger("modelplatform.grpc")

#: Neutral error codes -> canonical gRPC status codes (Triton's and TF Serving's mapping).
GRPC_STATUS: dict[ErrorCode, grpc.StatusCode] = {
    ErrorCode.INVALID_ARGUMENT: grpc.StatusCode.INVALID_ARGUMENT,
    ErrorCode.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    ErrorCode.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    ErrorCode.UNSUPPORTED: grpc.StatusCode.UNIMPLEMENTED,
    ErrorCode.ALREADY_EXISTS: grpc.StatusCode.ALREADY_EXISTS,
    ErrorCode.CANCELLED: grpc.StatusCode.CANCELLED,
    ErrorCode.DEADLINE_EXCEEDED: grpc.StatusCode.DEADLINE_EXCEEDED,
    ErrorCode.RESOURCE_EXHAUSTED: grpc.StatusCode.RESOURCE_EXHAUSTED,
    ErrorCode.PERMISSION_DENIED: grpc.StatusCode.PERMISSION_DENIED,
    ErrorCode.INTERNAL: grpc.StatusCode.INTERNAL,
}


def grpc_status(error: ModelPlatformError) -> grpc.StatusCode:
    """The gRPC status for a platform error (dialects with in-band errors don't need it)."""
    return GRPC_STATUS.get(error.code, grpc.StatusCode.UNKNOWN)
INT32_MAX = 2**31 - 1


def server_options(max_message_bytes: int, reuse_port: bool = False) -> list[tuple[str, int]]:
    """Port sharing only for ``--workers N``: a lone server must not silently share its port."""
    limit = INT32_MAX if max_message_bytes < 0 else max_message_bytes
    return [
        ("grpc.max_receive_message_length", limit),
        ("grpc.max_send_message_length", limit),
        ("grpc.so_reuseport", int(reuse_port)),
    ]


async def start_grpc_server(context: ServerContext) -> grpc.aio.Server | None:
    """Start the server if any plugin registered a service; returns it or None."""
    if not context.grpc_services:
        return None
    settings = context.settings
    options = server_options(settings.grpc_max_message_bytes, settings.workers > 1)
    server = grpc.aio.server(options=options)
    for service in context.grpc_services:
        service.add_to_server(server, context)
    address = f"{settings.host}:{settings.grpc_port}"
    if server.add_insecure_port(address) == 0:
        raise OSError(f"cannot bind gRPC to {address}")
    await server.start()
    log.info("grpc_started", address=address, services=sorted({s.name for s in context.grpc_services}))
    return server
