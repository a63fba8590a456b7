"""Running a chat or completion request: every choice at once, answered whole or as SSE chunks.

A streamed answer waits for the first piece before it answers, so an error
before any text (a bad parameter the model refused, an unknown model) is an
ordinary error answer; one after it is an ``{"error": ...}`` event that ends
the stream. Chunks follow OpenAI's order: the assistant role first (chat),
text as it comes, a closing chunk per choice with its ``finish_reason``,
the ``usage`` chunk when ``stream_options.include_usage`` asked, then
``data: [DONE]``. When the client leaves, the core closes the body, which
closes every choice's model stream.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from modelplatform import DataPlane, InferenceRequest, ModelPlatformError

from .bodies import Sampling
from .documents import DONE_EVENT, Header, chat_choice, chat_delta, completion_choice, sse
from .errors import error_document, http_status
from .generation import Choice, Piece, Usage, pieces
from .merging import merged

Item = tuple[int, Piece | None]


@dataclass(frozen=True, slots=True)
class Job:
    """One request, ready to run: one model request per choice, in choice order."""

    header: Header
    sampling: Sampling
    requests: list[InferenceRequest]
    chat: bool

    def choices(self) -> list[Choice]:
        return [Choice(index, self.sampling.max_tokens) for index in range(len(self.requests))]

    def streams(self, dataplane: DataPlane) -> AsyncIterator[Item]:
        return merged([pieces(dataplane, request) for request in self.requests])

    def usage(self, choices: list[Choice]) -> Usage:
        """The prompt counts once per prompt (its first choice), the completions all."""
        n = self.sampling.n
        prompt = sum(choice.prompt_tokens for choice in choices if choice.index % n == 0)
        return Usage(prompt, sum(choice.output_tokens for choice in choices))


async def answer(dataplane: DataPlane, job: Job) -> dict[str, Any]:
    """The whole answer object once every choice finished."""
    choices = job.choices()
    async with contextlib.aclosing(job.streams(dataplane)) as items:  # type: ignore[type-var]  # merged(): an async generator
        async for index, piece in items:
            if piece is not None:
                choices[index].add(piece)
    if job.chat:
        documents = [chat_choice(choice) for choice in choices]
    else:
        documents = [completion_choice(c.index, c.text, c.finish_reason) for c in choices]
    return job.header.document(documents, usage=job.usage(choices).document())


async def first_and_rest(dataplane: DataPlane, job: Job) -> tuple[Item | None, AsyncIterator[Item]]:
    """The first item (raising what it raises) and the stream it came from."""
    items = job.streams(dataplane)
    try:
        return await anext(items, None), items
    except BaseException:
        await items.aclose()  # type: ignore[attr-defined]  # merged(): an async generator
        raise


async def events(job: Job, first: Item | None, rest: AsyncIterator[Item]) -> AsyncIterator[bytes]:
    """The SSE body."""
    writer = _ChunkWriter(job)
    async with contextlib.aclosing(rest):  # type: ignore[type-var]  # merged(): an async generator
        try:
            for event in writer.opening():
                yield event
            if first is not None:
                yield writer.item(*first)
            async for index, piece in rest:
                yield writer.item(index, piece)
        except ModelPlatformError as error:
            yield sse(error_document(error.message, http_status(error), getattr(error, "param", None)))
            return
    if job.sampling.include_usage:
        yield writer.usage_chunk()
    yield DONE_EVENT


class _ChunkWriter:
    """Each item as its chunk, keeping the counts the usage chunk and finish reasons need."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.choices = job.choices()
        self.more: dict[str, Any] = {"usage": None} if job.sampling.include_usage else {}
        self._choice: Callable[[int, str, str | None], dict[str, Any]] = (
            _chat_chunk_choice if job.chat else completion_choice
        )

    def opening(self) -> list[bytes]:
        if not self.job.chat:
            return []
        return [self._chunk(chat_delta(c.index, {"role": "assistant", "content": ""})) for c in self.choices]

    def item(self, index: int, piece: Piece | None) -> bytes:
        choice = self.choices[index]
        if piece is None:
            closing = self._choice(index, "", choice.finish_reason)
            if self.job.chat:
                closing["delta"] = {}
            return self._chunk(closing)
        choice.add(piece)
        return self._chunk(self._choice(index, piece.text, None))

    def usage_chunk(self) -> bytes:
        return sse(self.job.header.document([], usage=self.job.usage(self.choices).document()))

    def _chunk(self, choice: dict[str, Any]) -> bytes:
        return sse(self.job.header.document([choice], **self.more))


def _chat_chunk_choice(index: int, text: str, finish_reason: str | None) -> dict[str, Any]:
    return chat_delta(index, {"content": text}, finish_reason)
