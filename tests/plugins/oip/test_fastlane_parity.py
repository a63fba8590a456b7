"""OIP infer answers the same through the fast lane and through Sanic.

The same request is sent twice to the real server: keep-alive HTTP/1.1 (the
fast lane answers it) and with ``Connection: close`` (the lane leaves it to
Sanic's route). Status, body and the headers clients read must not differ.
"""

from __future__ import annotations

import gzip
import json
import zlib

import numpy as np
import pytest

from ...http_wire import exchange

ZEROS = [0] * 16
ONES = list(range(16))


def _json(inputs: list[dict], **extra: object) -> bytes:
    return json.dumps({"inputs": inputs, **extra}).encode()


def _simple(data0: list[int] = ONES, shape: list[int] = [1, 16]) -> bytes:  # noqa: B006 - never mutated: a default shape
    return _json(
        [
            {"name": "INPUT0", "datatype": "INT32", "shape": shape, "data": data0},
            {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": ZEROS},
        ]
    )


def _binary() -> tuple[bytes, str]:
    raw = np.arange(16, dtype=np.int32).tobytes()
    header = _json(
        [
            {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "parameters": {"binary_data_size": 64}},
            {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "parameters": {"binary_data_size": 64}},
        ],
        outputs=[{"name": "OUTPUT0", "parameters": {"binary_data": True}}],
    )
    return header + raw + raw, f"Inference-Header-Content-Length: {len(header)}"


BINARY, BINARY_HEADER = _binary()
#: A small gzip body whose answer is over 1 MiB: written in parts by both paths.
LARGE_ANSWER = gzip.compress(
    _json([{"name": "INPUT0", "datatype": "FP32", "shape": [400_000], "data": [0.0] * 400_000}])
)

CASES = {
    "json": ("/v2/models/simple/infer", _simple(), ()),
    "versioned": ("/v2/models/simple/versions/1/infer", _simple(), ()),
    "binary": ("/v2/models/simple/infer", BINARY, (BINARY_HEADER,)),
    "gzip-body": ("/v2/models/simple/infer", gzip.compress(_simple()), ("Content-Encoding: gzip",)),
    "gzip-answer": ("/v2/models/simple/infer", _simple(), ("Accept-Encoding: gzip",)),
    "large-answer": ("/v2/models/identity_fp32/infer", LARGE_ANSWER, ("Content-Encoding: gzip",)),
    "bad-json": ("/v2/models/simple/infer", b"{not json", ()),
    "bad-shape": ("/v2/models/simple/infer", _simple(ZEROS[:4], [1, 4]), ()),
    "unknown-model": ("/v2/models/nope/infer", _simple(), ()),
    "unknown-version": ("/v2/models/simple/versions/9/infer", _simple(), ()),
    "bad-header-length": ("/v2/models/simple/infer", _simple(), ("Inference-Header-Content-Length: 99999",)),
    "bad-encoding": ("/v2/models/simple/infer", b"x", ("Content-Encoding: br",)),
}
COMPARED = ("content-type", "content-encoding", "inference-header-content-length")


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_fast_lane_and_sanic_answer_alike(server, case):
    path, body, headers = CASES[case]
    fast = exchange(server.http_port, path, body, headers, False, COMPARED)
    sanic = exchange(server.http_port, path, body, headers, True, COMPARED)
    assert (fast[2], sanic[2]) == ("keep-alive", "close")  # each path really was taken
    assert fast[0] == sanic[0] and fast[1] == sanic[1]
    assert fast[3] == sanic[3]
    if case == "gzip-answer":
        assert json.loads(zlib.decompress(fast[3], 16 + zlib.MAX_WBITS))["outputs"][0]["data"] == ONES
    elif case in ("json", "versioned", "gzip-body"):
        assert fast[0] == 200 and json.loads(fast[3])["outputs"][0]["data"] == ONES
    elif case == "large-answer":
        assert fast[0] == 200 and len(fast[3]) > 1 << 20
    elif case != "binary":
        assert fast[0] >= 400 and "error" in json.loads(fast[3])
