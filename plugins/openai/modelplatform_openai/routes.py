"""The routes under the prefix: ``GET /models``, ``GET /models/{model}``, ``POST /chat/completions``,
``POST /completions``, ``POST /embeddings``.

The POST routes name their model in the body (``model_param=""``): a key
limited to models is checked when the handler names it (before it is even
looked up, so a key cannot probe for other models' names). They are hot: the
core's fast lane answers them too, and compresses the answers a client
accepts compressed (Accept-Encoding), as it does other dialects' inference
routes. Errors a handler
raises are answered here, with the field at fault as ``param``; the rest
(access, body bounds, unknown paths) by the dialect's renderer.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

import orjson
import structlog

from modelplatform import (
    HttpReply,
    HttpRequest,
    HttpRoute,
    ModelNotFound,
    ModelPlatformError,
    PayloadTooLarge,
    PluginError,
    ServerContext,
    Settings,
    check_model_access,
)

from . import requests
from .completing import Job, answer, events, first_and_rest
from .convention import (
    EmbeddingModel,
    GenerateModel,
    NotAnOpenAIModel,
    ServedModel,
    ServedModels,
    declared_kind,
)
from .documents import SSE_CONTENT_TYPE, Header, model_document
from .embedding import embed
from .errors import FieldError, error_reply, http_status
from .fields import load_object
from .generation import build_request
from .options import prefix_of
from .prompting import chat_prompt

log = structlog.get_logger("modelplatform.openai")
DIALECT = "openai"
#: The dialect whose routes own ``/v1``: TF Serving's REST API.
TFSERVING_REST = "tfserving-rest"
Handler = Callable[[HttpRequest], Awaitable[HttpReply]]


class OpenAIRoutes:
    """Handlers bound to one server's dataplane (resolved at start-up)."""

    def __init__(self, context: ServerContext) -> None:
        self.dataplane = context.dataplane
        self.served = ServedModels()

    async def list_models(self, request: HttpRequest) -> HttpReply:
        names = sorted({entry.name for entry in self.dataplane.repository.index(ready_only=True)})
        data = [model_document(name) for name in names if self._declared(name)]
        return HttpReply(200, orjson.dumps({"object": "list", "data": data}))

    async def get_model(self, request: HttpRequest) -> HttpReply:
        name = request.params["model"]
        self._served(name)
        return HttpReply(200, orjson.dumps(model_document(name)))

    async def chat(self, request: HttpRequest) -> HttpReply:
        asked = requests.chat_request(load_object(request.body))
        model = self._generating(asked.sampling.model)
        prompt = chat_prompt(model, asked.messages)
        header = Header.new("chatcmpl", "chat.completion", model.name)
        return await self._run(model, [prompt], asked.sampling, header, chat=True)

    async def completions(self, request: HttpRequest) -> HttpReply:
        asked = requests.completion_request(load_object(request.body))
        model = self._generating(asked.sampling.model)
        header = Header.new("cmpl", "text_completion", model.name)
        return await self._run(model, asked.prompts, asked.sampling, header, chat=False)

    async def embeddings(self, request: HttpRequest) -> HttpReply:
        asked = requests.embedding_request(load_object(request.body))
        model = self._served(asked.model)
        if not isinstance(model, EmbeddingModel):
            raise FieldError(
                f"The model '{model.name}' is not an embedding model.", "model", "model_not_embedding"
            )
        return HttpReply(
            200, orjson.dumps(await embed(self.dataplane, model, asked), option=orjson.OPT_SERIALIZE_NUMPY)
        )

    async def _run(
        self,
        model: GenerateModel,
        prompts: list[str],
        sampling: requests.Sampling,
        header: Header,
        chat: bool,
    ) -> HttpReply:
        n = sampling.n
        calls = [build_request(model, prompts[i // n], sampling, i % n, f"{header.id}-{i}")
                 for i in range(len(prompts) * n)]  # fmt: skip
        job = Job(header, sampling, calls, chat)
        if not sampling.stream:
            return HttpReply(200, orjson.dumps(await answer(self.dataplane, job)))
        chunk = "chat.completion.chunk" if chat else "text_completion"
        job = Job(Header(header.id, chunk, header.model, header.created), sampling, calls, chat)
        first, rest = await first_and_rest(self.dataplane, job)
        return HttpReply(200, events(job, first, rest), SSE_CONTENT_TYPE, {"cache-control": "no-cache"})

    def _generating(self, name: str) -> GenerateModel:
        model = self._served(name)
        if not isinstance(model, GenerateModel):
            raise FieldError(f"The model '{model.name}' is an embedding model: use /embeddings.", "model",
                             "model_not_generative")  # fmt: skip
        return model

    def _served(self, name: str) -> ServedModel:
        check_model_access(name)  # a key limited to models: before the name is looked up
        try:
            config = self.dataplane.repository.model_config(name)
        except ModelNotFound as error:
            raise _unknown_model(name, error) from None
        return self.served.of(config)

    def _declared(self, name: str) -> bool:
        try:
            return bool(declared_kind(self.dataplane.repository.model_config(name)))
        except ModelPlatformError:  # unloaded since the index was read
            return False


def _unknown_model(name: str, error: ModelNotFound) -> ModelNotFound:
    error.param = "model"  # type: ignore[attr-defined]  # read by error_reply, as FieldError's
    error.openai_code = "model_not_found"  # type: ignore[attr-defined]  # read by error_reply
    error.message = f"The model '{name}' does not exist: {error.message}"
    return error


def answered(handler: Handler) -> Handler:
    """The handler with its errors answered in OpenAI's shape, ``param`` and ``code`` included."""

    @functools.wraps(handler)
    async def run(request: HttpRequest) -> HttpReply:
        try:
            return await handler(request)
        except ModelPlatformError as error:
            if not error.logged:
                log.info("request_failed", path=request.path, code=error.code.value, error=error.message)
                error.logged = True
            status = 413 if isinstance(error, PayloadTooLarge) else http_status(error)
            return error_reply(error, status)

    return run


def refuse_tfserving_clash(prefix: str, context: ServerContext) -> None:
    """``/v1`` is TF Serving's: the router would refuse the clash; say why, and what to do."""
    owns_v1 = prefix == "/v1" or prefix.startswith("/v1/")
    if owns_v1 and TFSERVING_REST in context.dialects:
        raise PluginError(
            f"openai: prefix '{prefix}' clashes with TF Serving REST's /v1 routes ('{TFSERVING_REST}' is "
            "loaded, and the router refuses clashing routes); keep the default /openai/v1, or disable "
            f"'{TFSERVING_REST}' (--disable-plugin {TFSERVING_REST})"
        )


def routes_for(settings: Settings) -> Callable[[ServerContext], list[HttpRoute]]:
    prefix = prefix_of(settings)

    def openai_routes(context: ServerContext) -> list[HttpRoute]:
        refuse_tfserving_clash(prefix, context)
        routes = OpenAIRoutes(context)
        post = {
            "chat/completions": routes.chat,
            "completions": routes.completions,
            "embeddings": routes.embeddings,
        }
        declared = [
            HttpRoute(("GET",), f"{prefix}/models", answered(routes.list_models), category="metadata"),
            HttpRoute(
                ("GET",), f"{prefix}/models/{{model}}", answered(routes.get_model), category="metadata"
            ),
        ]
        declared += [
            HttpRoute(
                ("POST",),
                f"{prefix}/{path}",
                answered(handler),
                hot=True,
                model_param="",
                category="inference",
            )
            for path, handler in post.items()
        ]
        return declared

    return openai_routes


__all__ = ["DIALECT", "NotAnOpenAIModel", "routes_for"]
