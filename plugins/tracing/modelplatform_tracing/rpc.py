"""``TraceSetting`` of ``inference.GRPCInferenceService``: Triton's trace extension over gRPC.

Served through this plugin's own generic handler beside oip-grpc's. A
request with no settings only reads them; a setting with no value falls
back (null over HTTP).
"""

from __future__ import annotations

from typing import Any

import grpc

from modelplatform import ServerContext
from modelplatform_oip.api import GRPC_SERVICE, unary_method
from modelplatform_oip.api import grpc_messages as pb

from .tracing import tracing_of
from .validity import check_model

SERVICE = GRPC_SERVICE


def add_to_server(server: grpc.aio.Server, context: ServerContext) -> None:
    tracing = tracing_of(context)

    async def trace_setting(request: Any, call: Any) -> Any:
        model = request.model_name
        check_model(context, model)
        if request.settings:
            changes = {name: list(value.value) or None for name, value in request.settings.items()}
            answer = await tracing.change(model, changes)
        else:
            answer = tracing.settings.answer(model)
        response = pb.TraceSettingResponse()
        for name, value in answer.items():
            response.settings[name].value.extend(value if isinstance(value, list) else [value])
        return response

    handlers = {"TraceSetting": unary_method(trace_setting, pb.TraceSettingRequest, pb.TraceSettingResponse)}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
