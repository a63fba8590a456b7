"""``grps.protos.v1.GrpsService`` on the shared gRPC server.

As grps, every RPC answers gRPC OK with the outcome in ``status``;
PredictStreaming yields one message per model response and ends with a
FAILURE message on error. A cancelled call closes the model's stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from modelplatform import InvalidArgument, ModelPlatformError, ServerContext, transport_deadline

from ..converter import Payload, to_message
from ..metadata import model_yaml, server_yaml
from ..protos import grps_pb2_grpc
from ..protos.grps_pb2 import GrpsMessage
from ..runtime import GrpsRuntime, runtime
from ..status import failure, from_error, success

SERVICE = "grps.protos.v1.GrpsService"
#: How the call's deadline names itself when a request misses it.
GRPC_DEADLINE = "gRPC deadline"


class GrpsServicer(grps_pb2_grpc.GrpsServiceServicer):
    def __init__(self, context: ServerContext, rt: GrpsRuntime) -> None:
        self.context = context
        self.rt = rt

    async def Predict(self, request: GrpsMessage, context: grpc.aio.ServicerContext) -> GrpsMessage:
        try:
            with transport_deadline(context.time_remaining(), GRPC_DEADLINE):
                inference = self.rt.decode(Payload.of(request), request.model, "")
                response = await self.rt.infer(inference)
                return success(to_message(response, Payload.of(request).kind))
        except ModelPlatformError as error:
            self.rt.refused(request.model)  # answered in-band with OK: no edge sees a failure
            return from_error(error)
        except Exception as error:  # noqa: BLE001 - answered in-band, as grps does
            return failure(500, f"internal error: {type(error).__name__}: {error}")

    async def PredictStreaming(
        self, request: GrpsMessage, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[GrpsMessage]:
        try:
            payload = Payload.of(request)
            inference = self.rt.decode(payload, request.model, "")
            async with self.rt.stream(inference) as responses:
                async for response in responses:
                    yield success(to_message(response, payload.kind))
        except ModelPlatformError as error:
            self.rt.refused(request.model)
            yield from_error(error)

    async def Online(self, request: GrpsMessage, context: grpc.aio.ServicerContext) -> GrpsMessage:
        self.rt.set_online(True)
        return success()

    async def Offline(self, request: GrpsMessage, context: grpc.aio.ServicerContext) -> GrpsMessage:
        self.rt.set_online(False)
        return success()

    async def CheckLiveness(self, request: GrpsMessage, context: grpc.aio.ServicerContext) -> GrpsMessage:
        return success() if self.rt.health.live else failure(503, "Service Unavailable")

    async def CheckReadiness(self, request: GrpsMessage, context: grpc.aio.ServicerContext) -> GrpsMessage:
        return success() if self.rt.ready() else failure(503, "Service Unavailable")

    async def ServerMetadata(self, request: GrpsMessage, context: grpc.aio.ServicerContext) -> GrpsMessage:
        message = success()
        message.str_data = server_yaml(self.context)
        return message

    async def ModelMetadata(self, request: GrpsMessage, context: grpc.aio.ServicerContext) -> GrpsMessage:
        try:
            if not request.str_data:
                raise InvalidArgument("No model name: set str_data to the model name")
            message = success()
            message.str_data = model_yaml(self.rt.dataplane, request.str_data)
            return message
        except ModelPlatformError as error:
            return from_error(error)


def add_to_server(server: grpc.aio.Server, context: ServerContext) -> None:
    grps_pb2_grpc.add_GrpsServiceServicer_to_server(GrpsServicer(context, runtime(context)), server)
