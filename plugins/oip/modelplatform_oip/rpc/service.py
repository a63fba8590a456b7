"""The ``inference.GRPCInferenceService`` RPCs that oip-grpc serves.

Registered through a generic handler that knows only these methods, so the
repository plugin can serve the ``Repository*`` RPCs of the same service
through its own. Errors become gRPC status codes through the core's
``grpc_guard``; a cancelled call or a missed deadline cancels the handler's
task, which unwinds the dataplane call, so nothing keeps running for a gone
client.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import structlog
from google.protobuf import json_format

from modelplatform import (
    DataPlane,
    Limits,
    ModelPlatformError,
    ServerContext,
    counted_in_call,
    grpc_guard,
    transport_deadline,
)

from ..protos import grpc_service_pb2 as pb
from ..regions import Regions
from .logging_ext import log_settings_rpc
from .tensors import decode_request, encode_response

SERVICE = "inference.GRPCInferenceService"
#: Stream requests in flight at once per stream; the reader waits beyond this.
STREAM_WINDOW = 64

log = structlog.get_logger("modelplatform_oip.grpc")
Handler = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]


class OipService:
    """Handlers bound to one server's dataplane (resolved at start-up)."""

    def __init__(self, context: ServerContext) -> None:
        self.dataplane: DataPlane = context.dataplane
        self.limits = Limits.from_settings(context.settings)
        self.regions = Regions(context)

    async def server_live(
        self, request: pb.ServerLiveRequest, context: Any
    ) -> pb.ServerLiveResponse:
        return pb.ServerLiveResponse(live=self.dataplane.live)

    async def server_ready(
        self, request: pb.ServerReadyRequest, context: Any
    ) -> pb.ServerReadyResponse:
        return pb.ServerReadyResponse(ready=self.dataplane.ready())

    async def model_ready(
        self, request: pb.ModelReadyRequest, context: Any
    ) -> pb.ModelReadyResponse:
        return pb.ModelReadyResponse(
            ready=self.dataplane.model_ready(request.name, request.version)
        )

    async def server_metadata(self, request: Any, context: Any) -> pb.ServerMetadataResponse:
        meta = self.dataplane.server_metadata()
        return pb.ServerMetadataResponse(
            name=meta["name"], version=meta["version"], extensions=meta["extensions"]
        )

    async def model_metadata(self, request: pb.ModelMetadataRequest, context: Any) -> Any:
        meta = self.dataplane.model_metadata(request.name, request.version)
        tensor = pb.ModelMetadataResponse.TensorMetadata
        return pb.ModelMetadataResponse(
            name=meta.name,
            versions=meta.versions,
            platform=meta.platform,
            inputs=[tensor(name=t.name, datatype=t.datatype, shape=t.shape) for t in meta.inputs],
            outputs=[tensor(name=t.name, datatype=t.datatype, shape=t.shape) for t in meta.outputs],
        )

    async def model_config(
        self, request: pb.ModelConfigRequest, context: Any
    ) -> pb.ModelConfigResponse:
        config = self.dataplane.model_config(request.name, request.version)
        response = pb.ModelConfigResponse()
        json_format.ParseDict(config.document, response.config)  # the JSON as read: same message
        return response

    async def model_statistics(self, request: pb.ModelStatisticsRequest, context: Any) -> Any:
        stats = await self.dataplane.statistics(request.name, request.version)
        return json_format.ParseDict(
            {"model_stats": [s.to_json() for s in stats]},
            pb.ModelStatisticsResponse(),
            ignore_unknown_fields=True,  # instance_stats has no field in Triton's proto
        )

    async def model_infer(
        self, request: pb.ModelInferRequest, context: Any
    ) -> pb.ModelInferResponse:
        return await self._infer(request)

    async def _infer(self, request: pb.ModelInferRequest) -> pb.ModelInferResponse:
        """Decode, infer, encode; outputs bound to shared-memory regions are written there."""
        inference = decode_request(request, self.limits, self.regions.read_input)
        try:
            placement = self.regions.bind_outputs(inference)
        except ModelPlatformError as error:
            raise error.naming_model(request.model_name) from None
        response = await self.dataplane.infer(inference)
        if placement is not None:
            response = placement.place(response)
        return encode_response(response)

    async def model_stream_infer(
        self, requests: AsyncIterator[pb.ModelInferRequest], context: grpc.aio.ServicerContext
    ) -> None:
        """One response per request, in completion order; errors go in ``error_message``.

        The call's deadline bounds every request of the stream (each task
        copies it from this one's context).
        """
        window = asyncio.Semaphore(STREAM_WINDOW)
        write_lock = asyncio.Lock()
        pending: set[asyncio.Task[None]] = set()
        try:
            with transport_deadline(context.time_remaining(), "gRPC deadline"):
                async for request in requests:
                    await window.acquire()
                    task = asyncio.ensure_future(self._stream_one(request, context, window, write_lock))
                    pending.add(task)
                    task.add_done_callback(pending.discard)
            if pending:
                await asyncio.gather(*pending)
        finally:
            for task in pending:  # the client went away: drop what it will never read
                task.cancel()

    async def _stream_one(
        self,
        request: pb.ModelInferRequest,
        context: grpc.aio.ServicerContext,
        window: asyncio.Semaphore,
        write_lock: asyncio.Lock,
    ) -> None:
        try:
            try:
                reply = pb.ModelStreamInferResponse(infer_response=await self._infer(request))
            except ModelPlatformError as error:
                if not counted_in_call():  # refused while decoding: no edge sees a stream's errors
                    self.dataplane.count_refused(request.model_name)
                reply = pb.ModelStreamInferResponse(error_message=error.message)
            except Exception as error:  # noqa: BLE001 - one request fails alone
                log.error("stream_request_failed", error=type(error).__name__)
                reply = pb.ModelStreamInferResponse(error_message=f"internal error: {error}")
            async with write_lock:
                await context.write(reply)
        finally:
            window.release()


def model_named(request: pb.ModelInferRequest) -> str:
    """The model a ModelInfer request names (its refusals are counted under it)."""
    return request.model_name


def unary_method(handler: Handler, request_type: Any, response_type: Any) -> grpc.RpcMethodHandler:
    """A unary handler with protobuf (de)serialisers whose errors become gRPC statuses.

    Public through ``modelplatform_oip.api`` for the extensions that add RPCs to
    this service (the repository plugin).
    """
    return grpc.unary_unary_rpc_method_handler(
        grpc_guard(handler),
        request_deserializer=request_type.FromString,
        response_serializer=response_type.SerializeToString,
    )


def add_to_server(server: grpc.aio.Server, context: ServerContext) -> None:
    service = OipService(context)
    handlers = {
        "ServerLive": unary_method(service.server_live, pb.ServerLiveRequest, pb.ServerLiveResponse),
        "ServerReady": unary_method(service.server_ready, pb.ServerReadyRequest, pb.ServerReadyResponse),
        "ModelReady": unary_method(service.model_ready, pb.ModelReadyRequest, pb.ModelReadyResponse),
        "ServerMetadata": unary_method(
            service.server_metadata, pb.ServerMetadataRequest, pb.ServerMetadataResponse
        ),
        "ModelMetadata": unary_method(
            service.model_metadata, pb.ModelMetadataRequest, pb.ModelMetadataResponse
        ),
        "ModelConfig": unary_method(service.model_config, pb.ModelConfigRequest, pb.ModelConfigResponse),
        "ModelStatistics": unary_method(
            service.model_statistics, pb.ModelStatisticsRequest, pb.ModelStatisticsResponse
        ),
        "ModelInfer": unary_method(service.model_infer, pb.ModelInferRequest, pb.ModelInferResponse),
        "ModelStreamInfer": grpc.stream_stream_rpc_method_handler(
            service.model_stream_infer,
            request_deserializer=pb.ModelInferRequest.FromString,
            response_serializer=pb.ModelStreamInferResponse.SerializeToString,
        ),
        "LogSettings": unary_method(log_settings_rpc, pb.LogSettingsRequest, pb.LogSettingsResponse),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
