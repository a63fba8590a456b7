"""One choice of a chat or completion: the model's responses as pieces of text.

The prompt goes to ``text_input``; each sampling field goes to the model
input of that name when it declares one (Triton's generate-extension rule),
else it becomes a request parameter (``stop`` as JSON text, parameters are
scalars). A model that declares the inputs of Triton's vLLM backend gets
them too: ``stream``, ``exclude_input_in_output`` and
``sampling_parameters`` (every sampling field as one JSON object).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from modelplatform import DataPlane, InferenceRequest, Tensor

from .bodies import Sampling
from .convention import INPUT_TOKENS, OUTPUT_TOKENS, TEXT_INPUT, TEXT_OUTPUT, GenerateModel
from .tensors import count, first_text, input_tensor


@dataclass(frozen=True, slots=True)
class Piece:
    """The text of one response and the tokens it stands for."""

    text: str
    output_tokens: int
    #: The prompt's tokens when the model reported them (num_input_tokens).
    input_tokens: int | None = None


@dataclass(slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def document(self) -> dict[str, int]:
        total = self.prompt_tokens + self.completion_tokens
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": total}  # fmt: skip


@dataclass(slots=True)
class Choice:
    """What one choice produced so far."""

    index: int
    max_tokens: int | None
    pieces: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    output_tokens: int = 0

    def add(self, piece: Piece) -> None:
        self.pieces.append(piece.text)
        self.output_tokens += piece.output_tokens
        if piece.input_tokens is not None:
            self.prompt_tokens = max(self.prompt_tokens, piece.input_tokens)

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    @property
    def finish_reason(self) -> str:
        limit = self.max_tokens
        return "length" if limit is not None and self.output_tokens >= limit else "stop"


def sampling_values(sampling: Sampling, choice: int) -> dict[str, Any]:
    """The fields the model is given; ``seed`` is offset per choice so n choices differ
    (choice 0 of a request without one gets none: the model's own default)."""
    seed = None if sampling.seed is None and choice == 0 else (sampling.seed or 0) + choice
    values = {"max_tokens": sampling.max_tokens, "temperature": sampling.temperature, "top_p": sampling.top_p,
              "seed": seed, "stop": sampling.stop, "user": sampling.user}  # fmt: skip
    return {name: value for name, value in values.items() if value is not None}


def build_request(
    model: GenerateModel, prompt: str, sampling: Sampling, choice: int, request_id: str
) -> InferenceRequest:
    config = model.config
    values = sampling_values(sampling, choice)
    extras = {"stream": sampling.stream, "exclude_input_in_output": True,
              "sampling_parameters": orjson.dumps(values).decode()}  # fmt: skip
    inputs = [_tensor(model, TEXT_INPUT, prompt)]
    parameters: dict[str, Any] = {}
    for name, value in values.items():
        if config.input_spec(name) is not None:
            inputs.append(_tensor(model, name, value))
        else:
            parameters[name] = orjson.dumps(value).decode() if isinstance(value, list) else value
    inputs += [_tensor(model, name, value) for name, value in extras.items() if config.input_spec(name)]
    return InferenceRequest(model.name, inputs, id=request_id, parameters=parameters)


def _tensor(model: GenerateModel, name: str, value: Any) -> Tensor:
    spec = model.config.input_spec(name)
    assert spec is not None  # only declared inputs are built
    values = value if isinstance(value, list) else [value]
    return input_tensor(spec, model.config.max_batch_size, values)


async def pieces(dataplane: DataPlane, request: InferenceRequest) -> AsyncIterator[Piece]:
    """Each response with text (a decoupled model's closing flag carries none).

    Closing this closes the model's stream: its generator or sender stops.
    """
    responses = dataplane.inference.stream(request)
    async with contextlib.aclosing(responses):
        async for response in responses:
            text = first_text(response, TEXT_OUTPUT)
            if text is None:
                continue
            produced = count(response, OUTPUT_TOKENS)
            yield Piece(text, 1 if produced is None else produced, count(response, INPUT_TOKENS))
