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
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import structlog
from google.protobuf import json_format

from modelplatform import (
    DataPlane,
    DecoupledModel,
    InferenceRequest,
    Limits,
    ModelPlatformError,
    ServerContext,
    counted_in_call,
    grpc_guard,
    transport_deadline,
)

from ..protos import grpc_service_pb2 as pb
from ..regions import Regions
from .logging_ext import LogSettingsRpc
from .parameters import EMPTY_FINAL
from .repeats import ReplyHeads, RequestTemplates
from .stream_errors import FirstError, ends_on_first_error
from .tensors import decode_request, encode_response, encode_response_bytes, response_metadata
from .wire import InferCall, read_infer_request

SERVICE = "inference.GRPCInferenceService"
#: Stream requests in flight at once per stream; the reader waits beyond this.
STREAM_WINDOW = 64
#: How a decoupled model's refusal names this RPC (Triton's words).
INFER_ENDPOINT = "ModelInfer RPC"
#: The flag on every streamed response (the client's opt-in: parameters.EMPTY_FINAL).
FINAL_RESPONSE = "triton_final_response"

log = structlog.get_logger("modelplatform_oip.grpc")
Handler = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]


class OipService:
    """Handlers bound to one server's dataplane (resolved at start-up)."""

    def __init__(self, context: ServerContext) -> None:
        dataplane: DataPlane = context.dataplane
        self.inference = dataplane.inference
        self.repository = dataplane.repository
        self.health = dataplane.health
        self.observation = dataplane.observation
        self.limits = Limits.from_settings(context.settings)
        self.regions = Regions(context)
        self.templates = RequestTemplates()
        self.heads = ReplyHeads(response_metadata)

    async def server_live(self, request: pb.ServerLiveRequest, context: Any) -> pb.ServerLiveResponse:
        return pb.ServerLiveResponse(live=self.health.live)

    async def server_ready(self, request: pb.ServerReadyRequest, context: Any) -> pb.ServerReadyResponse:
        return pb.ServerReadyResponse(ready=self.health.ready())

    async def model_ready(self, request: pb.ModelReadyRequest, context: Any) -> pb.ModelReadyResponse:
        return pb.ModelReadyResponse(ready=self.health.model_ready(request.name, request.version))

    async def server_metadata(self, request: Any, context: Any) -> pb.ServerMetadataResponse:
        meta = self.health.server_metadata()
        return pb.ServerMetadataResponse(
            name=meta["name"], version=meta["version"], extensions=meta["extensions"]
        )

    async def model_metadata(self, request: pb.ModelMetadataRequest, context: Any) -> Any:
        meta = self.repository.model_metadata(request.name, request.version)
        tensor = pb.ModelMetadataResponse.TensorMetadata
        return pb.ModelMetadataResponse(
            name=meta.name,
            versions=meta.versions,
            platform=meta.platform,
            inputs=[tensor(name=t.name, datatype=t.datatype, shape=t.shape) for t in meta.inputs],
            outputs=[tensor(name=t.name, datatype=t.datatype, shape=t.shape) for t in meta.outputs],
        )

    async def model_config(self, request: pb.ModelConfigRequest, context: Any) -> pb.ModelConfigResponse:
        config = self.repository.model_config(request.name, request.version)
        response = pb.ModelConfigResponse()
        json_format.ParseDict(config.document, response.config)  # the JSON as read: same message
        return response

    async def model_statistics(self, request: pb.ModelStatisticsRequest, context: Any) -> Any:
        stats = await self.observation.statistics(request.name, request.version)
        return json_format.ParseDict(
            {"model_stats": [s.to_json() for s in stats]},
            pb.ModelStatisticsResponse(),
            ignore_unknown_fields=True,  # instance_stats has no field in Triton's proto
        )

    def read_infer(self, data: bytes) -> InferCall:
        """ModelInfer's deserializer: bytes that repeat a known call's layout skip decoding."""
        template = self.templates.match(data)
        if template is None:
            return read_infer_request(data)
        return InferCall(template.message, (), data, template)

    async def model_infer(self, call: InferCall, context: Any) -> bytes:
        """Tensors stay views of the received bytes and are copied once into the reply (wire.py);
        outputs bound to shared-memory regions are written there. A call that repeats an
        earlier one's layout is rebuilt from its template (repeats.py)."""
        template = call.template
        if template is not None:  # its outputs carry no parameters, so name no region (repeats.py)
            request = template.request(call.data)
            try:  # Regions.infer without the binding, spelled out: one frame less per call
                response = self.inference.infer_now(request)  # a cheap model: no awaits at all
                if response is None:
                    response = await self.inference.infer(request)
            except DecoupledModel as error:
                raise error.at_endpoint(INFER_ENDPOINT) from None
            return encode_response_bytes(response, self.heads)
        inference = decode_request(call.message, self.limits, self.regions.read_input, call.raw)
        inference.parameters.pop(EMPTY_FINAL, None)  # a stream's flag: Triton takes it off here too
        self.templates.learn(call, inference)  # before the dataplane sees it
        return encode_response_bytes(await self.regions.infer(inference, INFER_ENDPOINT), self.heads)

    async def model_stream_infer(
        self, requests: AsyncIterator[pb.ModelInferRequest], context: grpc.aio.ServicerContext
    ) -> None:
        """Every response of each request (decoupled models: several), in completion order.

        Errors go in ``error_message``, or, when the client opened the stream
        with ``triton_grpc_error: true``, the first one ends the stream as its
        gRPC status (stream_errors.py). The call's deadline bounds every
        request of the stream (each task copies it from this one's context).
        """
        reader = asyncio.current_task()
        assert reader is not None  # grpc.aio runs every handler in a task
        first_error = FirstError(reader) if ends_on_first_error(context) else None
        window = asyncio.Semaphore(STREAM_WINDOW)
        write_lock = asyncio.Lock()
        pending: set[asyncio.Task[None]] = set()
        try:
            with transport_deadline(context.time_remaining(), "gRPC deadline"):
                async for request in requests:
                    await window.acquire()
                    task = asyncio.ensure_future(
                        self._stream_one(request, context, window, write_lock, first_error)
                    )
                    pending.add(task)
                    task.add_done_callback(pending.discard)
            if pending:
                await asyncio.gather(*pending)
        except asyncio.CancelledError:
            if first_error is None or first_error.status is None:
                raise  # the client went away or missed its deadline
            reader.uncancel()  # our own cancel: a request failed
        finally:
            for task in pending:  # the client went away, or the stream ends: drop the rest
                task.cancel()
        if first_error is not None and first_error.status is not None:
            if pending:  # no write of theirs may follow the status
                await asyncio.wait(set(pending))
            await first_error.abort(context)

    async def _stream_one(
        self,
        request: pb.ModelInferRequest,
        context: grpc.aio.ServicerContext,
        window: asyncio.Semaphore,
        write_lock: asyncio.Lock,
        first_error: FirstError | None,
    ) -> None:
        async def write(reply: pb.ModelStreamInferResponse) -> None:
            async with write_lock:
                await context.write(reply)

        try:
            try:
                inference = decode_request(request, self.limits, self.regions.read_input)
                await self._stream_responses(inference, write)
            except ModelPlatformError as error:
                if not counted_in_call():  # refused while decoding: no edge sees a stream's errors
                    self.inference.count_refused(request.model_name)
                if first_error is not None:
                    first_error.end_stream(error)
                else:
                    await write(pb.ModelStreamInferResponse(error_message=error.message))
            except Exception as error:  # noqa: BLE001 - one request fails alone
                log.error("stream_request_failed", error=type(error).__name__)
                if first_error is not None:
                    first_error.end_stream(error)
                else:
                    await write(pb.ModelStreamInferResponse(error_message=f"internal error: {error}"))
        finally:
            window.release()

    async def _stream_responses(
        self, inference: InferenceRequest, write: Callable[[Any], Awaitable[None]]
    ) -> None:
        """Write each response flagged ``triton_final_response``; then, when the client
        asked with ``triton_enable_empty_final_response`` and no response carried the
        final flag, an empty final one (Triton's rules, protocol-notes A9)."""
        empty_final = final_flag_wanted(inference)
        placement = self.regions.bind_outputs(inference)
        final = False
        async with contextlib.aclosing(self.inference.stream(inference)) as responses:
            async for response in responses:
                final = response.final
                if placement is not None:
                    response = placement.place(response)
                await write(stream_reply(encode_response(response), final))
        if empty_final and not final:
            empty = pb.ModelInferResponse(
                model_name=inference.model_name,
                model_version=inference.model_version,
                id=inference.id,
            )
            await write(stream_reply(empty, True))


def final_flag_wanted(inference: InferenceRequest) -> bool:
    """Take Triton's ``triton_enable_empty_final_response`` off the request (no model sees it;
    decoding checked that it is a bool)."""
    return bool(inference.parameters.pop(EMPTY_FINAL, False))


def stream_reply(message: pb.ModelInferResponse, final: bool) -> pb.ModelStreamInferResponse:
    message.parameters[FINAL_RESPONSE].bool_param = final
    return pb.ModelStreamInferResponse(infer_response=message)


def model_named(request: pb.ModelInferRequest | InferCall) -> str:
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
        "ModelInfer": grpc.unary_unary_rpc_method_handler(
            grpc_guard(service.model_infer),
            request_deserializer=service.read_infer,
            response_serializer=None,  # the handler answers serialised bytes
        ),
        "ModelStreamInfer": grpc.stream_stream_rpc_method_handler(
            service.model_stream_infer,
            request_deserializer=pb.ModelInferRequest.FromString,
            response_serializer=pb.ModelStreamInferResponse.SerializeToString,
        ),
        "LogSettings": unary_method(
            LogSettingsRpc(context.broadcast).answer, pb.LogSettingsRequest, pb.LogSettingsResponse
        ),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
