"""The official openai SDK, sync and async, streaming and not, against the real server (bundled models)."""

from __future__ import annotations

import asyncio
import base64

import numpy as np
import openai
import pytest

PREFIX = "/openai/v1"
HELLO = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}]


@pytest.fixture(scope="module")
def client(server):
    with openai.OpenAI(base_url=f"http://{server.http_url}{PREFIX}", api_key="unused", max_retries=0) as sdk:
        yield sdk


@pytest.fixture
def async_client(server):
    return openai.AsyncOpenAI(base_url=f"http://{server.http_url}{PREFIX}", api_key="unused", max_retries=0)


def test_models_lists_only_the_models_declared_for_the_api(client):
    names = [model.id for model in client.models.list()]
    assert "tiny_lm" in names and "tiny_embed" in names
    assert "simple" not in names  # served by the server, not declared for this API
    assert client.models.retrieve("tiny_lm").owned_by == "modelplatform"


def test_chat_answers_with_usage_and_the_length_finish_reason(client):
    completion = client.chat.completions.create(model="tiny_lm", messages=HELLO, max_tokens=5, seed=7)
    choice = completion.choices[0]
    assert completion.object == "chat.completion" and completion.id.startswith("chatcmpl-")
    assert choice.message.role == "assistant" and len(choice.message.content.split()) == 5
    assert choice.finish_reason == "length"
    # The template renders "<|system|> be brief\n<|user|> hello there\n<|assistant|>": 7 words.
    assert completion.usage.prompt_tokens == 7
    assert completion.usage.completion_tokens == 5 and completion.usage.total_tokens == 12


def test_seed_makes_answers_repeat_and_n_choices_differ(client):
    def ask(seed):
        return client.chat.completions.create(model="tiny_lm", messages=HELLO, max_tokens=8, seed=seed, n=3)

    first, again, other = ask(1), ask(1), ask(2)
    texts = [c.message.content for c in first.choices]
    assert texts == [c.message.content for c in again.choices]
    assert texts != [c.message.content for c in other.choices]
    assert [c.index for c in first.choices] == [0, 1, 2] and len(set(texts)) > 1


def test_max_completion_tokens_and_greedy_temperature(client):
    def ask(**more):
        return client.chat.completions.create(model="tiny_lm", messages=HELLO, temperature=0, **more)

    long, short = ask(max_completion_tokens=6), ask(max_completion_tokens=3)
    assert long.choices[0].message.content.startswith(short.choices[0].message.content)
    assert short.usage.completion_tokens == 3


def test_stop_ends_the_text_before_the_sequence(client):
    full = client.completions.create(model="tiny_lm", prompt="once", max_tokens=12, seed=5).choices[0].text
    word = full.split()[3]
    cut = client.completions.create(model="tiny_lm", prompt="once", max_tokens=12, seed=5, stop=[" " + word])
    assert cut.choices[0].text == full[: full.index(" " + word)]
    assert cut.choices[0].finish_reason == "stop"


def test_chat_stream_sends_the_role_then_text_then_the_finish_and_usage(client):
    stream = client.chat.completions.create(
        model="tiny_lm",
        messages=HELLO,
        max_tokens=4,
        seed=3,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    whole = client.chat.completions.create(model="tiny_lm", messages=HELLO, max_tokens=4, seed=3)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 4
    assert all(c.usage is None for c in chunks[:-1])


def test_completions_of_several_prompts_and_choices(client):
    answer = client.completions.create(model="tiny_lm", prompt=["one two", "three"], n=2, max_tokens=2)
    assert answer.object == "text_completion" and [c.index for c in answer.choices] == [0, 1, 2, 3]
    assert answer.usage.prompt_tokens == 3 and answer.usage.completion_tokens == 8


def test_embeddings_float_and_base64_agree(client):
    texts = ["the quick fox", "a lazy dog"]
    floats = client.embeddings.create(model="tiny_embed", input=texts, encoding_format="float")
    default = client.embeddings.create(model="tiny_embed", input=texts)  # the SDK asks for base64
    assert [d.index for d in floats.data] == [0, 1] and len(floats.data[0].embedding) == 32
    assert np.allclose(floats.data[0].embedding, default.data[0].embedding, atol=1e-6)
    assert abs(np.linalg.norm(floats.data[1].embedding) - 1) < 1e-5
    assert floats.usage.prompt_tokens == 6 and floats.model == "tiny_embed"


def test_embeddings_of_one_string(client):
    one = client.embeddings.create(model="tiny_embed", input="the quick fox", encoding_format="float")
    listed = client.embeddings.create(model="tiny_embed", input=["the quick fox"], encoding_format="float")
    assert one.data[0].embedding == listed.data[0].embedding


def test_sdk_errors_name_the_model_and_the_parameter(client):
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="no_such_model", messages=HELLO)
    assert missing.value.code == "model_not_found" and missing.value.param == "model"
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="tiny_lm", messages=HELLO, frequency_penalty=0.5)
    assert refused.value.param == "frequency_penalty" and refused.value.code == "unsupported_parameter"
    with pytest.raises(openai.BadRequestError) as wrong_kind:
        client.embeddings.create(model="tiny_lm", input="x")
    assert wrong_kind.value.param == "model"


def test_async_client_streams_and_embeds(async_client):
    async def run():
        async with async_client:
            stream = await async_client.completions.create(
                model="tiny_lm", prompt="hi", max_tokens=3, stream=True
            )
            pieces = [chunk.choices[0].text async for chunk in stream]
            vectors = await async_client.embeddings.create(model="tiny_embed", input=["a", "b", "c"])
            chat = await async_client.chat.completions.create(model="tiny_lm", messages=HELLO, max_tokens=2)
        return pieces, vectors, chat

    pieces, vectors, chat = asyncio.run(run())
    assert len("".join(pieces).split()) == 3
    assert len(vectors.data) == 3 and chat.usage.completion_tokens == 2


def test_base64_is_little_endian_float32(client):
    raw = client.embeddings.with_raw_response.create(
        model="tiny_embed", input="x y", encoding_format="base64"
    )
    data = raw.http_response.json()["data"][0]["embedding"]
    floats = client.embeddings.create(model="tiny_embed", input="x y", encoding_format="float")
    decoded = np.frombuffer(base64.b64decode(data), dtype="<f4")
    assert np.array_equal(decoded, np.asarray(floats.data[0].embedding, dtype=np.float32))


def test_a_stream_of_n_choices_closes_each_and_stop_works_streamed(client):
    def ask(**more):
        return client.completions.create(model="tiny_lm", prompt="go", max_tokens=10, seed=11, **more)

    whole = ask(n=2)
    chunks = list(ask(n=2, stream=True))
    texts = {
        index: "".join(c.choices[0].text for c in chunks if c.choices[0].index == index) for index in (0, 1)
    }
    assert texts == {c.index: c.text for c in whole.choices}
    assert sorted(c.choices[0].index for c in chunks if c.choices[0].finish_reason) == [0, 1]
    stop = whole.choices[0].text.split()[2]
    streamed = "".join(c.choices[0].text for c in ask(stop=stop, stream=True))
    assert streamed == whole.choices[0].text[: whole.choices[0].text.index(stop)]


def test_a_model_refusing_its_parameters_is_an_ordinary_error_before_the_stream(client):
    with pytest.raises(openai.BadRequestError, match="max_tokens must be a number 1..1024"):
        client.chat.completions.create(model="tiny_lm", messages=HELLO, max_tokens=5000, stream=True)
