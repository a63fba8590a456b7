"""What a chat model's ``text_input`` receives: the rendered template, or the messages themselves.

The template sees what Hugging Face chat templates expect: ``messages``
(each ``{"role", "content"}`` with text content), ``add_generation_prompt``
(true), ``bos_token`` and ``eos_token`` (empty: a model that needs them
writes them into its template), and ``raise_exception(message)``. It runs
in Jinja2's immutable sandbox: a template cannot reach Python objects.
"""

from __future__ import annotations

from typing import NoReturn

import jinja2
import orjson

from modelplatform import InvalidArgument

from .convention import CHAT_MESSAGES, CHAT_TEMPLATE, GenerateModel
from .errors import FieldError


def chat_prompt(model: GenerateModel, messages: list[dict[str, str]]) -> str:
    if model.template is not None:
        return _render(model, model.template, messages)
    if model.takes_messages:
        return orjson.dumps(messages).decode()
    raise FieldError(f"The model '{model.name}' does not serve chat completions: its config declares neither "
                     f"'{CHAT_TEMPLATE}' nor '{CHAT_MESSAGES}'.", "model", "model_not_chat")  # fmt: skip


def _render(model: GenerateModel, template: jinja2.Template, messages: list[dict[str, str]]) -> str:
    try:
        return template.render(messages=messages, add_generation_prompt=True, bos_token="", eos_token="",
                               raise_exception=_raise)  # fmt: skip
    except InvalidArgument:
        raise
    except jinja2.TemplateError as error:
        raise InvalidArgument(
            f"model '{model.name}': its chat template failed on these messages: {error}"
        ) from None


def _raise(message: str) -> NoReturn:
    raise FieldError(f"The chat template refused the messages: {message}", "messages", "invalid_value")
