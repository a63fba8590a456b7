"""Triton's generate extension against the session server, read by httpx and a real SSE client."""

from __future__ import annotations

import httpx
import httpx_sse
import orjson
import pytest

from modelplatform import InvalidArgument
from modelplatform_generate.mapping import shape_for

SEQUENCE = list(range(16))


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=f"http://{server.http_url}", timeout=60) as http:
        yield http


def _error(reply: httpx.Response, status: int) -> str:
    assert reply.status_code == status, reply.text
    assert reply.headers["content-type"] == "application/json"
    return reply.json()["error"]


def test_generate_maps_fields_to_inputs_and_flattens_outputs(client):
    body = {"id": "42", "INPUT0": SEQUENCE, "INPUT1": [1] * 16, "temperature": 0.5}
    reply = client.post("/v2/models/simple/versions/1/generate", json=body)
    assert reply.status_code == 200 and reply.headers["content-type"] == "application/json"
    assert reply.json() == {
        "id": "42",
        "model_name": "simple",
        "model_version": "1",
        "OUTPUT0": [i + 1 for i in SEQUENCE],
        "OUTPUT1": [i - 1 for i in SEQUENCE],
    }


def test_generate_unwraps_one_element_and_reads_inputs_inside_parameters(client):
    reply = client.post("/v2/models/stream_counter/generate", json={"parameters": {"COUNT": 1}})
    assert reply.json() == {"model_name": "stream_counter", "model_version": "1", "INDEX": 1}


def test_generate_stream_sends_each_response_as_an_sse_event(client):
    body = {"text_input": "streams are fun", "parameters": {"delay_ms": 1}}
    url = "/v2/models/word_stream/generate_stream"
    with httpx_sse.connect_sse(client, "POST", url, json=body) as source:
        assert source.response.status_code == 200
        assert source.response.headers["content-type"] == "text/event-stream; charset=utf-8"
        events = [(e.event, orjson.loads(e.data)) for e in source.iter_sse()]
    assert events == [
        ("message", {"model_name": "word_stream", "model_version": "1", "text_output": word})
        for word in ("streams", "are", "fun")
    ]


def test_generate_stream_of_a_generator_model(client):
    with httpx_sse.connect_sse(
        client, "POST", "/v2/models/stream_counter/generate_stream", json={"id": "c", "COUNT": 3}
    ) as source:
        events = [orjson.loads(e.data) for e in source.iter_sse()]
    assert [(e["id"], e["INDEX"]) for e in events] == [("c", 1), ("c", 2), ("c", 3)]


def test_generate_refuses_a_model_answering_several_times(client):
    error = _error(client.post("/v2/models/stream_counter/generate", json={"COUNT": 3}), 400)
    assert error.startswith("generate expects model to produce exactly 1 response")


def test_generate_stream_errors_before_the_first_response_are_plain_json(client):
    body = {"text_input": "a", "delay_ms": "x"}
    reply = client.post("/v2/models/word_stream/generate_stream", json=body)
    assert _error(reply, 400) == "parameter delay_ms must be a number 0..1000, got 'x'"


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"{bad", "failed to parse the request JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b'{"COUNT": [[1]]}', "a value must be a scalar or a flat list"),
        (b'{"COUNT": "three"}', "INT32 data must be JSON numbers"),
        (b'{"COUNT": 1, "tags": [1]}', "parameter 'tags' has invalid type"),
        (b'{"COUNT": [1, 2]}', "The schema can not convert input 'COUNT'"),
        (b'{"id": 7, "COUNT": 1}', "id"),
        (b"{}", "names none of its inputs (COUNT)"),
    ],
)
@pytest.mark.parametrize("kind", ["generate", "generate_stream"])
def test_bad_requests_are_400_with_an_error_object(client, body, words, kind):
    reply = client.post(f"/v2/models/stream_counter/{kind}", content=body)
    assert words in _error(reply, 400)


def test_unknown_model_and_version_are_404(client):
    assert "unknown model" in _error(client.post("/v2/models/nope/generate", json={}), 404)
    reply = client.post("/v2/models/simple/versions/9/generate_stream", json={})
    assert "version 9" in _error(reply, 404)


def test_generate_is_advertised(client):
    assert "generate" in client.get("/v2").json()["extensions"]


@pytest.mark.parametrize(
    ("declared", "count", "shape"),
    [
        ([1], 1, [1]),
        ([-1, 1], 1, [1, 1]),
        ([-1, 16], 16, [1, 16]),
        ([-1], 3, [3]),
        ([-1, -1], 3, [1, 3]),
        ([2, -1], 6, [2, 3]),
        ([], 1, []),
    ],
)
def test_shapes_follow_tritons_two_passes(declared, count, shape):
    assert shape_for("x", declared, count) == shape


@pytest.mark.parametrize(("declared", "count"), [([1], 2), ([4], 3), ([-1, 4], 6), ([], 2)])
def test_unshapable_counts_are_refused(declared, count):
    with pytest.raises(InvalidArgument, match="can not convert input 'x'"):
        shape_for("x", declared, count)
