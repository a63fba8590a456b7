"""The three POST bodies as plain values, every field checked (OpenAI API reference names).

Chat and completions share the sampling fields: ``n``, ``stop``,
``max_tokens`` (``max_completion_tokens`` on chat), ``temperature``,
``top_p``, ``seed``, ``user``, ``stream`` and ``stream_options``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import fields
from .errors import FieldError

MAX_N = 128
MAX_STOP = 4
MAX_TOKENS = 1 << 20
MAX_SEED = (1 << 63) - 1
MAX_EMBEDDING_INPUTS = 2048
_SAMPLING = frozenset({"model", "n", "stop", "max_tokens", "temperature", "top_p", "seed", "user", "stream",
                       "stream_options"})  # fmt: skip
#: A field with no value that changes nothing: refused unless null.
_ALWAYS = fields.NO_NEUTRAL_VALUE
#: Fields OpenAI defines that this server does not implement, with the value that changes nothing.
_UNSUPPORTED_COMMON = {"frequency_penalty": 0, "presence_penalty": 0, "logit_bias": {}, "logprobs": False,
                       "service_tier": "auto", "metadata": {}, "store": False}  # fmt: skip
_UNSUPPORTED_CHAT = {**_UNSUPPORTED_COMMON, "top_logprobs": 0, "tools": [], "tool_choice": "none",
                     "parallel_tool_calls": True, "functions": [], "function_call": "none",
                     "response_format": {"type": "text"}, "modalities": ["text"], "audio": _ALWAYS,
                     "prediction": _ALWAYS, "reasoning_effort": _ALWAYS, "web_search_options": _ALWAYS}  # fmt: skip
_UNSUPPORTED_COMPLETION = {**_UNSUPPORTED_COMMON, "logprobs": 0, "echo": False, "best_of": 1, "suffix": ""}
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
_MESSAGE_FIELDS = frozenset({"role", "content", "name"})


@dataclass(frozen=True, slots=True)
class Sampling:
    """What every choice of a chat or completion request is generated with."""

    model: str
    n: int = 1
    stop: list[str] | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    user: str | None = None
    stream: bool = False
    include_usage: bool = False


@dataclass(frozen=True, slots=True)
class ChatRequest:
    sampling: Sampling
    #: Each message as ``{"role", "content"[, "name"]}`` with text content.
    messages: list[dict[str, str]]


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    sampling: Sampling
    prompts: list[str]


@dataclass(frozen=True, slots=True)
class EmbeddingRequest:
    model: str
    inputs: list[str]
    base64: bool = False
    user: str | None = None
    dimensions: int | None = None


def chat_request(doc: dict[str, Any]) -> ChatRequest:
    fields.refuse_others(doc, _SAMPLING | {"messages", "max_completion_tokens"}, _UNSUPPORTED_CHAT)
    limit = _max_tokens(doc, "max_completion_tokens")
    return ChatRequest(_sampling(doc, limit), _messages(doc.get("messages")))


def completion_request(doc: dict[str, Any]) -> CompletionRequest:
    fields.refuse_others(doc, _SAMPLING | {"prompt"}, _UNSUPPORTED_COMPLETION)
    prompts = fields.texts(doc, "prompt", MAX_N, required=True)
    assert prompts is not None  # required
    sampling = _sampling(doc, None)
    if len(prompts) * sampling.n > MAX_N:  # one model request each: bound what one body may start
        raise FieldError(f"Invalid 'n': {len(prompts)} prompts x n = {sampling.n} is over {MAX_N} choices.", "n",
                         "invalid_value")  # fmt: skip
    return CompletionRequest(sampling, prompts)


def embedding_request(doc: dict[str, Any]) -> EmbeddingRequest:
    fields.refuse_others(doc, frozenset({"model", "input", "encoding_format", "user", "dimensions"}), {})
    inputs = fields.texts(doc, "input", MAX_EMBEDDING_INPUTS, required=True)
    assert inputs is not None  # required
    if any(not item for item in inputs):
        raise FieldError("Invalid 'input': an input must not be empty.", "input", "invalid_value")
    encoding = fields.text(doc, "encoding_format") or "float"
    if encoding not in ("float", "base64"):
        raise FieldError(f"Invalid 'encoding_format': '{encoding}' is not 'float' or 'base64'.",
                         "encoding_format", "invalid_value")  # fmt: skip
    model = fields.text(doc, "model", required=True) or ""
    dimensions = fields.integer(doc, "dimensions", 1, 1 << 16)
    return EmbeddingRequest(model, inputs, encoding == "base64", fields.text(doc, "user"), dimensions)


def _sampling(doc: dict[str, Any], limit: int | None) -> Sampling:
    stream = fields.flag(doc, "stream")
    return Sampling(
        model=fields.text(doc, "model", required=True) or "",
        n=fields.integer(doc, "n", 1, MAX_N) or 1,
        stop=fields.texts(doc, "stop", MAX_STOP),
        max_tokens=limit if limit is not None else _max_tokens(doc, "max_tokens"),
        temperature=fields.number(doc, "temperature", 0.0, 2.0),
        top_p=fields.number(doc, "top_p", 0.0, 1.0),
        seed=fields.integer(doc, "seed", -MAX_SEED - 1, MAX_SEED),
        user=fields.text(doc, "user"),
        stream=stream,
        include_usage=_include_usage(doc.get("stream_options"), stream),
    )


def _max_tokens(doc: dict[str, Any], name: str) -> int | None:
    return fields.integer(doc, name, 1, MAX_TOKENS)


def _include_usage(options: Any, stream: bool) -> bool:
    if options is None:
        return False
    if not stream:
        raise FieldError("The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                         "stream_options", "invalid_value")  # fmt: skip
    if not isinstance(options, dict):
        raise FieldError(
            "Invalid type for 'stream_options': expected an object.", "stream_options", "invalid_type"
        )
    fields.refuse_others(options, frozenset({"include_usage"}), {"include_obfuscation": False})
    return fields.flag(options, "include_usage")


def _messages(value: Any) -> list[dict[str, str]]:
    if value is None:
        raise FieldError("Missing required parameter: 'messages'.", "messages", "missing_required_parameter")
    if not isinstance(value, list) or not value:
        raise FieldError("Invalid 'messages': expected a non-empty array.", "messages", "invalid_type")
    return [_message(item, index) for index, item in enumerate(value)]


def _message(item: Any, index: int) -> dict[str, str]:
    where = f"messages[{index}]"
    if not isinstance(item, dict):
        raise FieldError(f"Invalid '{where}': expected an object.", where, "invalid_type")
    fields.refuse_others(item, _MESSAGE_FIELDS, {"tool_calls": [], "refusal": "", "audio": _ALWAYS})
    role = item.get("role")
    if not isinstance(role, str) or role not in _ROLES:  # a list or object is no role (and unhashable)
        raise FieldError(f"Invalid '{where}.role': expected one of {sorted(_ROLES)}.", f"{where}.role",
                         "invalid_value")  # fmt: skip
    message = {"role": role, "content": _content(item.get("content"), f"{where}.content")}
    name = fields.text(item, "name")
    if name is not None:
        message["name"] = name
    return message


def _content(content: Any, where: str) -> str:
    """A string, or text parts joined (OpenAI's array form); other parts are refused by name."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise FieldError(f"Invalid '{where}': expected a string or an array of parts.", where, "invalid_type")
    pieces = []
    for number, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
            raise UnsupportedPart(f"{where}[{number}]")
        pieces.append(part["text"])
    return "".join(pieces)


class UnsupportedPart(FieldError):
    def __init__(self, where: str) -> None:
        super().__init__(f"Invalid '{where}': only text content parts are supported.", where,
                         "unsupported_content")  # fmt: skip
