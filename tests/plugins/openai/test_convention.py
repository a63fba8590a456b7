"""The model convention read from real config.pbtxt files, the chat prompt it gives, and how
values are laid out in a declared input."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelplatform import InvalidArgument
from modelplatform.testing import read_model_config
from modelplatform_openai.convention import (
    EmbeddingModel,
    GenerateModel,
    MisdeclaredModel,
    NotAnOpenAIModel,
    served_model,
)
from modelplatform_openai.errors import FieldError
from modelplatform_openai.prompting import chat_prompt
from modelplatform_openai.tensors import laid_out

from ...conftest import MODEL_REPOSITORY

TEXT_IO = (
    'input [ { name: "text_input" data_type: TYPE_STRING dims: [ 1 ] } ]\n'
    'output [ { name: "text_output" data_type: TYPE_STRING dims: [ 1 ] } ]\n'
)


def _config(tmp_path: Path, body: str, **parameters: str):
    folder = tmp_path / "m"
    folder.mkdir()
    lines = [f'parameters {{ key: "{key.replace("_", ".", 1)}" value {{ string_value: {value!r} }} }}'
             for key, value in parameters.items()]  # fmt: skip
    (folder / "config.pbtxt").write_text('name: "m"\nbackend: "python"\n' + body + "\n".join(lines) + "\n")
    return read_model_config(folder)


def test_the_bundled_models_declare_what_they_are():
    lm = served_model(read_model_config(MODEL_REPOSITORY / "tiny_lm"))
    embed = served_model(read_model_config(MODEL_REPOSITORY / "tiny_embed"))
    assert isinstance(lm, GenerateModel) and lm.serves_chat and not lm.takes_messages
    assert isinstance(embed, EmbeddingModel) and (embed.text_input.name, embed.vector_output.name) == (
        "text",
        "embedding",
    )
    with pytest.raises(NotAnOpenAIModel, match="declares no parameter 'openai.kind'"):
        served_model(read_model_config(MODEL_REPOSITORY / "simple"))


@pytest.mark.parametrize(
    ("body", "parameters", "words"),
    [
        (TEXT_IO, {"openai_kind": "chat"}, "'openai.kind' is 'chat'"),
        ('input [ { name: "text_input" data_type: TYPE_FP32 dims: [ 1 ] } ]\n', {"openai_kind": "generate"},
         "needs BYTES 'text_input' and 'text_output'"),
        (TEXT_IO, {"openai_kind": "generate", "openai_chat_template": "{% for %}"}, "does not compile"),
        (TEXT_IO, {"openai_kind": "embedding", "openai_embedding_input": "text_input",
                   "openai_embedding_output": "text_output"}, "must name a floating-point output"),
        (TEXT_IO, {"openai_kind": "embedding"}, "'openai.embedding_input' must name a BYTES input"),
    ],
)  # fmt: skip
def test_a_declaration_that_does_not_hold_is_refused_saying_what_is_wrong(tmp_path, body, parameters, words):
    with pytest.raises(MisdeclaredModel, match=words):
        served_model(_config(tmp_path, body, **parameters))


def test_the_template_renders_messages_as_data(tmp_path):
    template = "{% for m in messages %}[{{ m.role }}] {{ m.content }}|{% endfor %}{% if add_generation_prompt %}>{% endif %}"
    model = served_model(_config(tmp_path, TEXT_IO, openai_kind="generate", openai_chat_template=template))
    messages = [{"role": "user", "content": "{{ 7 * 7 }} {% raw %}"}]
    assert chat_prompt(model, messages) == "[user] {{ 7 * 7 }} {% raw %}|>"


def test_raise_exception_in_a_template_is_a_400_naming_messages(tmp_path):
    template = "{% if messages[0].role != 'system' %}{{ raise_exception('system first') }}{% endif %}"
    model = served_model(_config(tmp_path, TEXT_IO, openai_kind="generate", openai_chat_template=template))
    with pytest.raises(FieldError, match="system first") as refused:
        chat_prompt(model, [{"role": "user", "content": "x"}])
    assert refused.value.param == "messages"


def test_messages_given_to_the_model_or_no_chat_at_all(tmp_path):
    (tmp_path / "a").mkdir()
    takes = served_model(
        _config(tmp_path / "a", TEXT_IO, openai_kind="generate", openai_chat_messages="true")
    )
    assert chat_prompt(takes, [{"role": "user", "content": "hi"}]) == '[{"role":"user","content":"hi"}]'
    plain = served_model(_config(tmp_path, TEXT_IO, openai_kind="generate"))
    with pytest.raises(FieldError, match="does not serve chat completions"):
        chat_prompt(plain, [{"role": "user", "content": "hi"}])


@pytest.mark.parametrize(
    ("declared", "count", "shape"),
    [([-1], 3, [3]), ([-1, 1], 3, [3, 1]), ([-1, -1], 2, [2, 1]), ([1], 1, [1])],
)
def test_values_are_laid_out_in_the_first_variable_dimension(declared, count, shape):
    assert laid_out("x", declared, count) == shape


@pytest.mark.parametrize(("declared", "count"), [([1], 2), ([-1, 2], 4)])
def test_values_that_do_not_fit_the_declared_input_are_refused(declared, count):
    """One value (a text) a row: a fixed size other than 1 beside the variable one cannot hold them."""
    with pytest.raises(InvalidArgument, match=f"cannot hold {count} value"):
        laid_out("x", declared, count)
