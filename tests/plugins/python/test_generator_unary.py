"""A generator model asked, over a unary call, for a request that yields nothing: a 4xx, not a 500.

Found by the grps type-confusion property test: ``{"model": "stream_counter",
"gmap": {"s_i32": {"COUNT": 0}}}`` answered 500 "generator model yielded nothing".
"""

from __future__ import annotations

import json

from tests.http_wire import post

ZERO_STEPS = {"inputs": [{"name": "COUNT", "shape": [1], "datatype": "INT32", "data": [0]}]}


JSON = {"Content-Type": "application/json"}


def call(server, path: str, document: dict) -> tuple[int, bytes]:
    status, _, body = post(server.http_port, path, json.dumps(document).encode(), JSON)
    return status, body


def test_oip_unary_call_of_a_generator_yielding_nothing_is_400(server):
    status, body = call(server, "/v2/models/stream_counter/infer", ZERO_STEPS)
    assert status == 400, body
    assert "yielded no response" in json.loads(body)["error"]


def test_grps_predict_of_a_generator_yielding_nothing_is_400(server):
    payload = {"model": "stream_counter", "gmap": {"s_i32": {"COUNT": 0}}}
    status, body = call(server, "/grps/v1/infer/predict", payload)
    assert status == 400, body
    assert "yielded no response" in body.decode()


def test_the_same_model_still_answers_a_unary_call_with_its_last_response(server):
    one_step = {"inputs": [{**ZERO_STEPS["inputs"][0], "data": [3]}]}
    status, body = call(server, "/v2/models/stream_counter/infer", one_step)
    assert status == 200, body
    assert json.loads(body)["outputs"][0]["data"] == [3]
