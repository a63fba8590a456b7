"""The OpenAI dialect on the wire, read with raw HTTP: SSE framing, error shapes and status
codes, body bounds, compression, and the metrics label."""

from __future__ import annotations

import gzip
import re

import httpx
import orjson
import pytest

from ...http_wire import exchange

PREFIX = "/openai/v1"
CHAT = {"model": "tiny_lm", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "seed": 1}


@pytest.fixture(scope="module")
def http(server):
    with httpx.Client(base_url=f"http://{server.http_url}{PREFIX}", timeout=60) as client:
        yield client


def _error(reply: httpx.Response, status: int) -> dict:
    assert reply.status_code == status, reply.text
    assert reply.headers["content-type"] == "application/json"
    error = reply.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return error


def test_a_stream_is_sse_data_lines_ending_in_done(http):
    reply = http.post("/chat/completions", json={**CHAT, "stream": True})
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "text/event-stream; charset=utf-8"
    events = reply.text.split("\n\n")
    assert events[-1] == "" and events[-2] == "data: [DONE]"
    docs = [orjson.loads(event.removeprefix("data: ")) for event in events[:-2]]
    assert all(event.startswith("data: {") and "\n" not in event for event in events[:-2])
    assert {doc["object"] for doc in docs} == {"chat.completion.chunk"} and len({d["id"] for d in docs}) == 1
    assert docs[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert docs[-1]["choices"][0] == {"index": 0, "delta": {}, "logprobs": None, "finish_reason": "length"}
    assert "usage" not in docs[0]  # only with stream_options.include_usage


@pytest.mark.parametrize(
    ("body", "param", "code"),
    [
        ({**CHAT, "logit_bias": {"1": 5}}, "logit_bias", "unsupported_parameter"),
        ({**CHAT, "tools": [{"type": "function"}]}, "tools", "unsupported_parameter"),
        ({**CHAT, "reasoning_effort": "low"}, "reasoning_effort", "unsupported_parameter"),
        ({**CHAT, "colour": "blue"}, "colour", "unknown_parameter"),
        ({**CHAT, "temperature": 3}, "temperature", "invalid_value"),
        ({**CHAT, "n": "2"}, "n", "invalid_type"),
        ({**CHAT, "stop": ["a", "b", "c", "d", "e"]}, "stop", "invalid_value"),
        ({**CHAT, "stream_options": {"include_usage": True}}, "stream_options", "invalid_value"),
        ({"model": "tiny_lm"}, "messages", "missing_required_parameter"),
        ({**CHAT, "messages": [{"role": "robot", "content": "x"}]}, "messages[0].role", "invalid_value"),
        ({**CHAT, "messages": [{"role": ["user"], "content": "x"}]}, "messages[0].role", "invalid_value"),
        ({**CHAT, "messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
         "messages[0].content[0]", "unsupported_content"),
    ],
)  # fmt: skip
def test_a_refused_field_is_named_with_openai_error_shape(http, body, param, code):
    error = _error(http.post("/chat/completions", json=body), 400)
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", param, code)


def test_prompts_times_n_is_bounded(http):
    error = _error(http.post("/completions", json={"model": "tiny_lm", "prompt": ["a"] * 10, "n": 13}), 400)
    assert error["param"] == "n" and "over 128 choices" in error["message"]


def test_a_default_value_of_an_unsupported_field_changes_nothing_and_passes(http):
    reply = http.post(
        "/chat/completions", json={**CHAT, "frequency_penalty": 0, "logprobs": False, "user": "u1"}
    )
    assert reply.status_code == 200, reply.text


def test_unknown_model_is_404_model_not_found(http):
    error = _error(http.post("/embeddings", json={"model": "ghost", "input": "x"}), 404)
    assert (error["param"], error["code"]) == ("model", "model_not_found")
    assert _error(http.get("/models/ghost"), 404)["code"] == "model_not_found"


def test_a_model_not_declared_for_the_api_is_404_saying_why(http):
    error = _error(http.post("/completions", json={"model": "simple", "prompt": "x"}), 404)
    assert "declares no parameter 'openai.kind'" in error["message"]


def test_errors_the_core_answers_take_the_openai_shape(http):
    assert _error(http.get("/no/such/path"), 404)["type"] == "invalid_request_error"
    assert _error(http.post("/chat/completions", content=b"{not json"), 400)["param"] is None
    assert _error(http.get("/chat/completions"), 405)["code"] is None


def test_a_compressed_body_is_accepted_and_the_answer_compressed_when_asked(http):
    body = gzip.compress(
        orjson.dumps({"model": "tiny_embed", "input": ["a b c"] * 50, "encoding_format": "float"})
    )
    reply = http.post("/embeddings", content=body,
                      headers={"content-encoding": "gzip", "accept-encoding": "gzip"})  # fmt: skip
    assert reply.status_code == 200 and reply.headers.get("content-encoding") == "gzip"
    assert len(reply.json()["data"]) == 50


def test_requests_are_counted_under_their_own_protocol(server, http):
    assert http.post("/embeddings", json={"model": "tiny_embed", "input": "x"}).status_code == 200
    metrics = httpx.get(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=30).text
    assert 'model="tiny_embed",version="1",protocol="openai"' in metrics.replace(", ", ",")
    live = httpx.get(f"http://{server.http_url}/live/data", timeout=30).json()
    assert live["protocols"]["openai"] >= 1


PARITY = {
    "embeddings": ("/embeddings", {"model": "tiny_embed", "input": ["a b", "c"], "encoding_format": "float"}),
    "unknown-model": ("/embeddings", {"model": "ghost", "input": "x"}),
    "unsupported": ("/completions", {"model": "tiny_lm", "prompt": "x", "echo": True}),
    "bad-json": ("/chat/completions", b"{nope"),
    "chat-stream": ("/chat/completions", {**CHAT, "stream": True, "stream_options": {"include_usage": True}}),
    "completion": ("/completions", {"model": "tiny_lm", "prompt": "x", "max_tokens": 4, "n": 2, "seed": 4}),
}
_FRESH = re.compile(rb'"id":"[a-z]+-[0-9a-f]+(-[0-9]+)?"|"created":[0-9]+')


@pytest.mark.parametrize("case", PARITY, ids=list(PARITY))
def test_fast_lane_and_sanic_answer_alike(server, case):
    """Each request both ways (keep-alive: the lane; Connection: close: Sanic); ids and times aside."""
    path, document = PARITY[case]
    body = document if isinstance(document, bytes) else orjson.dumps(document)
    compared = ("content-type", "transfer-encoding")
    fast = exchange(
        server.http_port, PREFIX + path, body, ("Content-Type: application/json",), False, compared
    )
    sanic = exchange(
        server.http_port, PREFIX + path, body, ("Content-Type: application/json",), True, compared
    )
    assert (fast[2], sanic[2]) == ("keep-alive", "close")
    assert fast[0] == sanic[0] and fast[1] == sanic[1]
    assert _FRESH.sub(b"", fast[3]) == _FRESH.sub(b"", sanic[3])
    assert (fast[0] == 200) == (case in ("embeddings", "chat-stream", "completion")), fast[3]
