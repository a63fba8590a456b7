"""``/v2/models/{model}[/versions/{version}]/generate`` and ``.../generate_stream``.

``generate`` answers one JSON object and fails when the model answers other
than once (Triton: use generate_stream for a model with several responses);
``generate_stream`` sends every response as a Server-Sent Event. An error
before the first response is an ordinary error reply (oip's status table,
``{"error": ...}``); one after it is an ``{"error": ...}`` event that ends
the stream. A client that disconnects closes the stream, which closes the
model's (its generator or response sender stops).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import orjson

from modelplatform import (
    HttpReply,
    HttpRequest,
    HttpRoute,
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    Limits,
    ModelPlatformError,
    RouteDoc,
    ServerContext,
)

from .events import CONTENT_TYPE, error_event, event
from .mapping import load_body, response_json, to_request

DIALECT = "generate"
PREFIXES = ("/v2/models/{model}", "/v2/models/{model}/versions/{version:int}")
ONE_RESPONSE = (
    "generate expects model to produce exactly 1 response, "
    "use generate stream for model that generates various number of responses"
)


class GenerateRoutes:
    """Handlers bound to one server's dataplane (resolved at start-up)."""

    def __init__(self, context: ServerContext) -> None:
        self.inference = context.dataplane.inference
        self.repository = context.dataplane.repository
        self.limits = Limits.from_settings(context.settings)

    async def generate(self, request: HttpRequest) -> HttpReply:
        inference = self._decode(request)
        async with contextlib.aclosing(self.inference.stream(inference)) as responses:
            first = await anext(responses, None)
            if first is None or await anext(responses, None) is not None:
                raise InvalidArgument(ONE_RESPONSE)  # a second response: stop the model now
        return HttpReply(200, orjson.dumps(response_json(first)))

    async def generate_stream(self, request: HttpRequest) -> HttpReply:
        responses = self.inference.stream(self._decode(request))
        try:
            first = await anext(responses)  # its error is an ordinary error reply
        except StopAsyncIteration:
            return HttpReply(200, b"", CONTENT_TYPE)
        except BaseException:
            await responses.aclose()
            raise
        return HttpReply(200, _events(first, responses), CONTENT_TYPE)

    def _decode(self, request: HttpRequest) -> InferenceRequest:
        model, version = request.params["model"], request.params.get("version", "")
        meta = self.repository.model_metadata(model, version)
        try:
            return to_request(load_body(bytes(request.body)), meta, version, self.limits)
        except InvalidArgument as error:
            raise error.naming_model(model) from None


async def _events(first: InferenceResponse, rest: AsyncIterator[InferenceResponse]) -> AsyncIterator[bytes]:
    """The SSE body; closed by the core when the client leaves, which closes ``rest``."""
    async with contextlib.aclosing(rest):  # type: ignore[type-var]  # DataPlane.stream's answers: an async generator
        try:
            yield event(response_json(first))
            async for response in rest:
                yield event(response_json(response))
        except ModelPlatformError as error:
            yield error_event(error.message)


#: Triton's generate body: input names -> values (scalars or lists), plus ``parameters``.
GENERATE_BODY = {"type": "object", "description": "Input name -> its value; parameters: request parameters",
                 "properties": {"id": {"type": "string"}, "parameters": {"type": "object"}}}  # fmt: skip
DOCS = {
    "generate": RouteDoc(summary="Generate: one JSON answer", request=GENERATE_BODY,
                         responses={200: {"type": "object"}}),
    "generate_stream": RouteDoc(summary="Generate, each response a Server-Sent Event", request=GENERATE_BODY,
                                responses={200: {"type": "string"}}, response_type="text/event-stream"),
}  # fmt: skip


def generate_routes(context: ServerContext) -> list[HttpRoute]:
    routes = GenerateRoutes(context)
    handlers = {"generate": routes.generate, "generate_stream": routes.generate_stream}
    return [
        HttpRoute(
            ("POST",), f"{prefix}/{kind}", handler, model_param="model", category="inference", doc=DOCS[kind]
        )
        for prefix in PREFIXES
        for kind, handler in handlers.items()
    ]
