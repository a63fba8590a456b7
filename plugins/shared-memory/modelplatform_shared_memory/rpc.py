"""SystemSharedMemory* and CudaSharedMemory* of ``inference.GRPCInferenceService``.

Served through this plugin's own generic handler beside oip-grpc's, with
Triton's messages from the oip extension API; errors become statuses through
the core's one gRPC table (ALREADY_EXISTS, NOT_FOUND, INVALID_ARGUMENT,
UNIMPLEMENTED for Triton's UNSUPPORTED while client shared memory is disabled).
"""

from __future__ import annotations

from typing import Any

import grpc

from modelplatform_oip.api import GRPC_SERVICE, unary_method
from modelplatform_oip.api import grpc_messages as pb

from .operations import SharedMemoryOperations

SERVICE = GRPC_SERVICE
METHODS = (
    "SystemSharedMemoryStatus",
    "SystemSharedMemoryRegister",
    "SystemSharedMemoryUnregister",
    "CudaSharedMemoryStatus",
    "CudaSharedMemoryRegister",
    "CudaSharedMemoryUnregister",
)


class SharedMemoryService:
    def __init__(self, operations: SharedMemoryOperations) -> None:
        self.ops = operations

    async def system_status(self, request: Any, context: Any) -> Any:
        reply = pb.SystemSharedMemoryStatusResponse()
        for region in self.ops.system_status(request.name):
            reply.regions[region.name].CopyFrom(
                pb.SystemSharedMemoryStatusResponse.RegionStatus(
                    name=region.name, key=region.key, offset=region.offset, byte_size=region.byte_size
                )
            )
        return reply

    async def system_register(self, request: Any, context: Any) -> Any:
        await self.ops.register_system(request.name, request.key, request.offset, request.byte_size)
        return pb.SystemSharedMemoryRegisterResponse()

    async def system_unregister(self, request: Any, context: Any) -> Any:
        await self.ops.unregister_system(request.name)
        return pb.SystemSharedMemoryUnregisterResponse()

    async def cuda_status(self, request: Any, context: Any) -> Any:
        reply = pb.CudaSharedMemoryStatusResponse()
        for region in self.ops.cuda_status(request.name):
            reply.regions[region.name].CopyFrom(
                pb.CudaSharedMemoryStatusResponse.RegionStatus(
                    name=region.name, device_id=region.device_id, byte_size=region.byte_size
                )
            )
        return reply

    async def cuda_register(self, request: Any, context: Any) -> Any:
        await self.ops.register_cuda(request.name, request.raw_handle, request.device_id, request.byte_size)
        return pb.CudaSharedMemoryRegisterResponse()

    async def cuda_unregister(self, request: Any, context: Any) -> Any:
        await self.ops.unregister_cuda(request.name)
        return pb.CudaSharedMemoryUnregisterResponse()


def handler(operations: SharedMemoryOperations) -> grpc.GenericRpcHandler:
    service = SharedMemoryService(operations)
    calls = (service.system_status, service.system_register, service.system_unregister,
             service.cuda_status, service.cuda_register, service.cuda_unregister)  # fmt: skip
    handlers = {
        method: unary_method(call, getattr(pb, f"{method}Request"), getattr(pb, f"{method}Response"))
        for method, call in zip(METHODS, calls, strict=True)
    }
    return grpc.method_handlers_generic_handler(SERVICE, handlers)
