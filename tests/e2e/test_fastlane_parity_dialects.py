"""TF Serving's and grps's hot routes answer the same through the fast lane and through Sanic.

As tests/plugins/oip/test_fastlane_parity.py does for OIP infer: each request
is sent keep-alive (the lane answers it) and with ``Connection: close`` (the
lane leaves it to Sanic); status, the headers clients read and the body
(de-chunked when streamed) must be identical.
"""

from __future__ import annotations

import json

import pytest

from ..http_wire import exchange

SIMPLE_ROW = {"instances": [{"INPUT0": list(range(16)), "INPUT1": [1] * 16}]}
SIMPLE_COLUMNS = {"inputs": {"INPUT0": [list(range(16))], "INPUT1": [[1] * 16]}}
HALF_PLUS_THREE = {"instances": [1.0, 2.0, 5.0]}
GRPS_SIMPLE = {"model": "simple", "gtensors": {"tensors": [
    {"name": "INPUT0", "dtype": "DT_INT32", "shape": [1, 16], "flat_int32": list(range(16))},
    {"name": "INPUT1", "dtype": "DT_INT32", "shape": [1, 16], "flat_int32": [1] * 16},
]}}  # fmt: skip
COUNT_TWO = {"model": "stream_counter", "gmap": {"s_i32": {"COUNT": 2}}}
JSON = ("Content-Type: application/json",)

CASES = {
    "tfs-predict-rows": ("/v1/models/simple:predict", SIMPLE_ROW, ()),
    "tfs-predict-columns": ("/v1/models/simple/versions/1:predict", SIMPLE_COLUMNS, ()),
    "tfs-predict-case": ("/V1/Models/saved_model_half_plus_three:PREDICT", HALF_PLUS_THREE, ()),
    "tfs-unknown-model": ("/v1/models/nope:predict", SIMPLE_ROW, ()),
    "tfs-bad-json": ("/v1/models/simple:predict", b"{nope", ()),
    "tfs-bad-input": ("/v1/models/simple:predict", {"instances": [{"INPUT0": [1]}]}, ()),
    "grps-predict": ("/grps/v1/infer/predict", GRPS_SIMPLE, JSON),
    "grps-no-content-type": ("/grps/v1/infer/predict", GRPS_SIMPLE, ()),
    "grps-unknown-model": ("/grps/v1/infer/predict", {**GRPS_SIMPLE, "model": "nope"}, JSON),
    "grps-bad-json": ("/grps/v1/infer/predict", b"[1", JSON),
    # Asked for by query (grps's default): Sanic's on both; the lane's chunked writer
    # is compared with Sanic's in tests/core/test_http_routes.py.
    "grps-stream": ("/grps/v1/infer/predict?streaming=true", COUNT_TWO, JSON),
}
COMPARED = ("content-type", "content-length", "transfer-encoding")


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_dialect_hot_routes_answer_alike_on_both_paths(server, case):
    path, document, headers = CASES[case]
    body = document if isinstance(document, bytes) else json.dumps(document).encode()
    fast = exchange(server.http_port, path, body, headers, False, COMPARED)
    sanic = exchange(server.http_port, path, body, headers, True, COMPARED)
    assert (fast[2], sanic[2]) == ("keep-alive", "close")  # each path really was taken
    assert fast[0] == sanic[0] and fast[3] == sanic[3]
    assert fast[1]["content-type"] == sanic[1]["content-type"]
    if case.startswith(("tfs-predict", "grps-predict")):
        assert fast[0] == 200, fast[3]
    elif case == "grps-stream":
        assert fast[0] == 200 and fast[1]["transfer-encoding"] == "chunked"
        assert fast[3].count(b'"SUCCESS"') == 2 and sanic[1]["transfer-encoding"] == "chunked"
    else:
        assert fast[0] >= 400 and b"error" in fast[3].lower() or b"FAILURE" in fast[3]
