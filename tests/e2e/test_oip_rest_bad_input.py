"""Bad input over raw HTTP: a clear 4xx {"error": ...}, and the server keeps serving."""

from __future__ import annotations

import http.client
import json
import socket

import pytest

from modelplatform.testing import ServerProcess
from tests.conftest import MODEL_REPOSITORY

from ..http_wire import exchange

LIMITS = ("--max-request-bytes", "4096", "--max-tensor-elements", "1000", "--max-bytes-element", "8")


@pytest.fixture(scope="module")
def limited():
    with ServerProcess("--model-repository", str(MODEL_REPOSITORY), *LIMITS) as process:
        yield process


def request(server, method: str, path: str, body: bytes | None = None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read(), dict(response.getheaders())
    finally:
        conn.close()


def infer(server, model: str, doc) -> tuple[int, dict]:
    body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    status, data, _ = request(server, "POST", f"/v2/models/{model}/infer", body)
    return status, json.loads(data)


def simple_input(name="INPUT0", datatype="INT32", shape=(1, 16), data=None):
    return {
        "name": name,
        "datatype": datatype,
        "shape": list(shape),
        "data": data if data is not None else [1] * 16,
    }


def still_serves(server) -> None:
    doc = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [2], "data": [1.0, 3.0]}]}
    status, body = infer(server, "saved_model_half_plus_three", doc)
    assert status == 200, body
    assert body["outputs"][0]["data"] == [3.5, 4.5]


def test_health_endpoints_have_empty_bodies(server):
    for path in ("/v2/health/live", "/v2/health/ready"):
        status, body, headers = request(server, "GET", path)
        assert (status, body) == (200, b"")
        assert headers["content-type"] != "None"


def test_unknown_route_and_wrong_method(server):
    status, body, headers = request(server, "GET", "/v2/nothing/here")
    assert status == 404 and json.loads(body) == {"error": "Not Found"}
    assert headers["content-type"] == "application/json"
    status, body, _ = request(server, "GET", "/v2/models/simple/infer")
    assert status == 405 and json.loads(body) == {"error": "Method Not Allowed"}


def test_model_not_ready_is_400_with_error(server):
    status, body, _ = request(server, "GET", "/v2/models/simple/versions/9/ready")
    assert status == 400 and "error" in json.loads(body)


def test_unknown_model_metadata_is_404(server):
    status, body, _ = request(server, "GET", "/v2/models/missing")
    assert status == 404
    assert json.loads(body)["error"] == "Request for unknown model: 'missing' is not found"


def test_no_content_type_needed(server):
    doc = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [2.0]}]}
    status, data, _ = request(
        server, "POST", "/v2/models/saved_model_half_plus_three/infer", json.dumps(doc).encode()
    )
    assert status == 200 and json.loads(data)["outputs"][0]["data"] == [4.0]


@pytest.mark.parametrize(
    ("doc", "fragment"),
    [
        (b"{not json", "failed to parse"),
        (b"[1, 2]", "JSON object"),
        ({"inputs": []}, "non-empty 'inputs'"),
        ({"inputs": [simple_input(name="NOPE"), simple_input("INPUT1")]}, "unknown input"),
        (
            {"inputs": [simple_input(datatype="FP32"), simple_input("INPUT1")]},
            "expected datatype INT32, got FP32",
        ),
        ({"inputs": [simple_input(shape=(16,)), simple_input("INPUT1")]}, "expected shape [-1, 16]"),
        (
            {"inputs": [simple_input(shape=(9, 16), data=[1] * 144), simple_input("INPUT1")]},
            "batch size of 1 to 8",
        ),
        ({"inputs": [simple_input(data=[1] * 15), simple_input("INPUT1")]}, "needs 16 elements, data has 15"),
        ({"inputs": [simple_input(data=[1.5] * 16), simple_input("INPUT1")]}, "must be JSON integers"),
        ({"inputs": [simple_input(data=[2**40] * 16), simple_input("INPUT1")]}, "out of range for INT32"),
        ({"inputs": [simple_input(data=[[1, 2], [3]]), simple_input("INPUT1")]}, "rectangular"),
        ({"inputs": [simple_input(data=["a"] * 16), simple_input("INPUT1")]}, "JSON numbers"),
        ({"inputs": [simple_input()]}, "missing required input(s) ['INPUT1']"),
        ({"inputs": [simple_input(), simple_input()]}, "given twice"),
        ({"inputs": [simple_input(shape=(1, -16)), simple_input("INPUT1")]}, "invalid dimension"),
        (
            {"inputs": [simple_input(), simple_input("INPUT1")], "outputs": [{"name": "OUT9"}]},
            "unknown output 'OUT9'",
        ),
        ({"inputs": [simple_input(datatype="INT33"), simple_input("INPUT1")]}, "unknown datatype"),
    ],
)
def test_invalid_simple_requests(server, doc, fragment):
    status, body = infer(server, "simple", doc)
    assert status == 400, body
    assert fragment in body["error"]
    assert body["error"].startswith("model 'simple'"), body  # every failure names the model
    if fragment not in ("failed to parse", "JSON object", "non-empty 'inputs'"):
        assert any(n in body["error"] for n in ("'INPUT", "'NOPE'", "'OUT9'")), body  # and the tensor
    still_serves(server)


def test_simple_string_rejects_non_numeric_text(server):
    inputs = [
        {"name": n, "datatype": "BYTES", "shape": [1, 16], "data": ["x"] * 16} for n in ("INPUT0", "INPUT1")
    ]
    status, body = infer(server, "simple_string", {"inputs": inputs})
    assert status == 400 and "decimal integers" in body["error"]


def test_declared_content_length_over_limit_refused_before_body(limited):
    """Only the headers are sent: the server must answer 413 without waiting for a body."""
    with socket.create_connection(("127.0.0.1", limited.http_port), timeout=10) as sock:
        sock.sendall(
            b"POST /v2/models/identity_fp32/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n"
        )
        reply = sock.recv(4096)
    assert reply.startswith(b"HTTP/1.1 413")
    assert b'"error"' in reply
    still_serves(limited)


def test_element_count_over_limit_refused(limited):
    doc = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [10**12, 10**12], "data": [1.0]}]}
    status, body = infer(limited, "identity_fp32", doc)
    assert status == 400 and "over the limit of 1000" in body["error"]
    assert body["error"].startswith("model 'identity_fp32', input 'INPUT0'")
    assert "at least" in body["error"]  # refused before the whole product was computed
    still_serves(limited)


def test_bytes_element_over_limit_refused(limited):
    doc = {"inputs": [{"name": "INPUT0", "datatype": "BYTES", "shape": [1], "data": ["123456789"]}]}
    status, body = infer(limited, "identity_bytes", doc)
    assert status == 400 and "over the limit of 8" in body["error"]
    still_serves(limited)


@pytest.mark.parametrize("close", [False, True], ids=["lane", "sanic"])
def test_an_endless_version_number_is_a_clear_error(server, close):
    """A version of 5,000 digits is an unknown version, on either HTTP path, and nothing breaks."""
    path = "/v2/models/simple/versions/" + "9" * 5000 + "/infer"
    status, _, _, body = exchange(server.http_port, path, b"{}", (), close, ())
    assert 400 <= status < 500, body
    status, _, _, _ = exchange(server.http_port, "/v2/models/simple/versions/1/infer", b"{}", (), close, ())
    assert status == 400  # the server still answers (an empty request is refused, not a crash)
