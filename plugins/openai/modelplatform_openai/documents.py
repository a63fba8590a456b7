"""The answer objects, field for field as the OpenAI API reference shows them."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import orjson

from .generation import Choice


@dataclass(frozen=True, slots=True)
class Header:
    """What every object and chunk of one answer shares."""

    id: str
    object: str
    model: str
    created: int

    @classmethod
    def new(cls, prefix: str, kind: str, model: str) -> Header:
        return cls(f"{prefix}-{uuid.uuid4().hex}", kind, model, int(time.time()))

    def document(self, choices: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
        doc = {"id": self.id, "object": self.object, "created": self.created, "model": self.model,
               "choices": choices}  # fmt: skip
        doc.update(more)
        return doc


def chat_choice(choice: Choice) -> dict[str, Any]:
    message = {"role": "assistant", "content": choice.text, "refusal": None}
    return {
        "index": choice.index,
        "message": message,
        "logprobs": None,
        "finish_reason": choice.finish_reason,
    }


def chat_delta(index: int, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish_reason}


def completion_choice(index: int, text: str, finish_reason: str | None) -> dict[str, Any]:
    return {"index": index, "text": text, "logprobs": None, "finish_reason": finish_reason}


def model_document(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "modelplatform"}


def sse(doc: dict[str, Any]) -> bytes:
    """One Server-Sent Event: orjson writes no raw newline, so one ``data:`` line."""
    return b"data: " + orjson.dumps(doc) + b"\n\n"


DONE_EVENT = b"data: [DONE]\n\n"
SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"
