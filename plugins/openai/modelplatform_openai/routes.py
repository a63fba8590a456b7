"""The routes under the prefix: ``GET /models``, ``GET /models/{model}``, ``POST /chat/completions``,
``POST /completions``, ``POST /embeddings``.

The POST routes name their model in the body (``model_param=""``): a key
limited to models is checked when the handler names it (before it is even
looked up, so a key cannot probe for other models' names). They are hot: the
core's fast lane answers them too, and compresses the answers a client
accepts compressed (Accept-Encoding), as it does other dialects' inference
routes. Errors a handler raises are answered by :func:`errors.answered`, with
the field at fault as ``param``; the rest (access, body bounds, unknown
paths) by the dialect's renderer.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson

from modelplatform import (
    HttpReply,
    HttpRequest,
    HttpRoute,
    ModelNotFound,
    ModelPlatformError,
    RouteDoc,
    ServerContext,
    Settings,
    check_model_access,
)

from . import bodies
from .completing import Job, answer, events, first_and_rest
from .convention import (
    EmbeddingModel,
    GenerateModel,
    ServedModel,
    ServedModels,
    declared_kind,
)
from .documents import SSE_CONTENT_TYPE, Header, model_document
from .embedding import embed
from .errors import FieldError, UnknownModel, answered
from .fields import load_object
from .generation import build_request
from .options import prefix_of, refuse_tfserving_clash
from .prompting import chat_prompt

DIALECT = "openai"


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
        asked = bodies.chat_request(load_object(request.body))
        model = self._generating(asked.sampling.model)
        prompt = chat_prompt(model, asked.messages)
        kind = "chat.completion.chunk" if asked.sampling.stream else "chat.completion"
        return await self._run(
            model, [prompt], asked.sampling, Header.new("chatcmpl", kind, model.name), chat=True
        )

    async def completions(self, request: HttpRequest) -> HttpReply:
        asked = bodies.completion_request(load_object(request.body))
        model = self._generating(asked.sampling.model)
        header = Header.new("cmpl", "text_completion", model.name)
        return await self._run(model, asked.prompts, asked.sampling, header, chat=False)

    async def embeddings(self, request: HttpRequest) -> HttpReply:
        asked = bodies.embedding_request(load_object(request.body))
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
        sampling: bodies.Sampling,
        header: Header,
        chat: bool,
    ) -> HttpReply:
        """Choice ``i`` is prompt ``i // n``'s choice ``i % n`` (OpenAI's numbering)."""
        n = sampling.n
        calls = [build_request(model, prompts[i // n], sampling, i % n, f"{header.id}-{i}")
                 for i in range(len(prompts) * n)]  # fmt: skip
        job = Job(header, sampling, calls, chat)
        if not sampling.stream:
            return HttpReply(200, orjson.dumps(await answer(self.dataplane, job)))
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
            raise UnknownModel(name, error.message) from None
        return self.served.of(config)

    def _declared(self, name: str) -> bool:
        try:
            return bool(declared_kind(self.dataplane.repository.model_config(name)))
        except ModelPlatformError:  # unloaded since the index was read
            return False


_OBJECT = {"type": "object"}
#: OpenAI's request bodies, as far as the documents say (the OpenAI API reference has the rest).
_BODIES = {
    "chat/completions": {"type": "object", "required": ["model", "messages"], "properties": {
        "model": {"type": "string"}, "messages": {"type": "array", "items": _OBJECT},
        "stream": {"type": "boolean"}, "max_tokens": {"type": "integer"}}},
    "completions": {"type": "object", "required": ["model", "prompt"], "properties": {
        "model": {"type": "string"}, "prompt": {}, "stream": {"type": "boolean"},
        "max_tokens": {"type": "integer"}}},
    "embeddings": {"type": "object", "required": ["model", "input"], "properties": {
        "model": {"type": "string"}, "input": {}, "encoding_format": {"type": "string"}}},
}  # fmt: skip
_SUMMARIES = {"chat/completions": "Chat completion", "completions": "Completion", "embeddings": "Embeddings"}
#: OpenAI's error body: ``{"error": {"message", "type", "param", "code"}}``.
ERROR_SCHEMA = {"type": "object", "required": ["error"], "properties": {"error": {
    "type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}}}}  # fmt: skip


def _post_doc(path: str) -> RouteDoc:
    streams = ("text/event-stream",) if path != "embeddings" else ()
    return RouteDoc(
        summary=_SUMMARIES[path], request=_BODIES[path], responses={200: _OBJECT}, other_types=streams
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
            HttpRoute(
                ("GET",),
                f"{prefix}/models",
                answered(routes.list_models),
                category="metadata",
                doc=RouteDoc(summary="The models", responses={200: _OBJECT}),
            ),
            HttpRoute(
                ("GET",),
                f"{prefix}/models/{{model}}",
                answered(routes.get_model),
                category="metadata",
                doc=RouteDoc(summary="One model", responses={200: _OBJECT}),
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
                doc=_post_doc(path),
            )
            for path, handler in post.items()
        ]
        return declared

    return openai_routes
