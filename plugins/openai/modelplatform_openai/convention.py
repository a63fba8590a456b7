"""Which models the dialect serves, as their configuration declares (never guessed).

A model is served over the OpenAI API when its config.pbtxt says so with
``parameters { key: "openai.kind" ... }``:

- ``generate``: a chat/completion model on Triton's generate-extension
  conventions: a ``text_input`` BYTES input, a ``text_output`` BYTES output
  (each response carries the next piece of text), sampling parameters as
  request parameters (or as inputs of those names). ``/chat/completions``
  needs ``openai.chat_template`` (a Jinja2 template rendering ``messages``
  into the prompt) or ``openai.chat_messages: "true"`` (the model takes the
  messages itself, as JSON text in ``text_input``).
- ``embedding``: ``openai.embedding_input`` names its BYTES text input and
  ``openai.embedding_output`` its floating-point vector output (one row per text).

Optional INT32/INT64 outputs ``num_input_tokens`` and ``num_output_tokens``
(the names Triton's vLLM backend uses) give the ``usage`` counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from modelplatform import ModelConfig, NotFound, TensorSpec

KIND = "openai.kind"
CHAT_TEMPLATE = "openai.chat_template"
CHAT_MESSAGES = "openai.chat_messages"
EMBEDDING_INPUT = "openai.embedding_input"
EMBEDDING_OUTPUT = "openai.embedding_output"
GENERATE, EMBEDDING = "generate", "embedding"
TEXT_INPUT, TEXT_OUTPUT = "text_input", "text_output"
INPUT_TOKENS, OUTPUT_TOKENS = "num_input_tokens", "num_output_tokens"
_FLOATS = ("FP16", "FP32", "FP64", "BF16")


class NotAnOpenAIModel(NotFound):
    """A model the server has whose configuration does not declare it for this API (or not so)."""

    def __init__(self, name: str, why: str) -> None:
        super().__init__(f"The model '{name}' is not served by the OpenAI API: {why}")
        self.param = "model"
        self.openai_code = "model_not_found"


class MisdeclaredModel(NotAnOpenAIModel):
    """The declaration is there but does not hold (an operator's mistake, said plainly)."""


@dataclass(frozen=True, slots=True)
class GenerateModel:
    name: str
    config: ModelConfig
    #: The compiled chat template, or None.
    template: jinja2.Template | None
    #: The model takes the chat messages itself (JSON text in text_input).
    takes_messages: bool

    @property
    def serves_chat(self) -> bool:
        return self.template is not None or self.takes_messages


@dataclass(frozen=True, slots=True)
class EmbeddingModel:
    name: str
    config: ModelConfig
    text_input: TensorSpec
    vector_output: TensorSpec


ServedModel = GenerateModel | EmbeddingModel
_TEMPLATES = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)


def declared_kind(config: ModelConfig) -> str:
    return config.parameters.get(KIND, "").strip().lower()


def served_model(config: ModelConfig) -> ServedModel:
    """What ``config`` declares; NotAnOpenAIModel (404) saying why when it declares nothing usable."""
    kind = declared_kind(config)
    if kind == GENERATE:
        return _generate_model(config)
    if kind == EMBEDDING:
        return _embedding_model(config)
    if not kind:
        raise NotAnOpenAIModel(config.name, f"its config declares no parameter '{KIND}'")
    raise MisdeclaredModel(config.name, f"'{KIND}' is '{kind}', not '{GENERATE}' or '{EMBEDDING}'")


def _generate_model(config: ModelConfig) -> GenerateModel:
    text_in, text_out = config.input_spec(TEXT_INPUT), config.output_spec(TEXT_OUTPUT)
    if text_in is None or text_in.datatype != "BYTES" or text_out is None or text_out.datatype != "BYTES":
        raise MisdeclaredModel(
            config.name, f"a '{GENERATE}' model needs BYTES '{TEXT_INPUT}' and '{TEXT_OUTPUT}'"
        )
    source = config.parameters.get(CHAT_TEMPLATE, "")
    try:
        template = _TEMPLATES.from_string(source) if source.strip() else None
    except jinja2.TemplateSyntaxError as error:
        raise MisdeclaredModel(config.name, f"'{CHAT_TEMPLATE}' does not compile: {error}") from None
    takes_messages = config.parameters.get(CHAT_MESSAGES, "").strip().lower() == "true"
    return GenerateModel(config.name, config, template, takes_messages)


def _embedding_model(config: ModelConfig) -> EmbeddingModel:
    text_in = config.input_spec(config.parameters.get(EMBEDDING_INPUT, "").strip())
    vector_out = config.output_spec(config.parameters.get(EMBEDDING_OUTPUT, "").strip())
    if text_in is None or text_in.datatype != "BYTES":
        raise MisdeclaredModel(config.name, f"'{EMBEDDING_INPUT}' must name a BYTES input of the model")
    if vector_out is None or vector_out.datatype not in _FLOATS:
        raise MisdeclaredModel(config.name, f"'{EMBEDDING_OUTPUT}' must name a floating-point output")
    return EmbeddingModel(config.name, config, text_in, vector_out)


class ServedModels:
    """Each model's declaration, read once per loaded configuration (templates compile once)."""

    def __init__(self) -> None:
        self._by_name: dict[str, tuple[ModelConfig, ServedModel]] = {}

    def of(self, config: ModelConfig) -> ServedModel:
        known = self._by_name.get(config.name)
        if known is not None and known[0] is config:
            return known[1]
        served = served_model(config)
        self._by_name[config.name] = (config, served)
        return served
