"""The binary extension against the real server: tritonclient.http and raw HTTP."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tritonclient.http as httpclient

from modelplatform.testing import ServerProcess
from tests.conftest import MODEL_REPOSITORY

from ...http_wire import post

HEADER = "Inference-Header-Content-Length"


@pytest.fixture(scope="module")
def client(server):
    with httpclient.InferenceServerClient(server.http_url) as c:
        yield c


def _input(name: str, array: np.ndarray, datatype: str) -> httpclient.InferInput:
    tensor = httpclient.InferInput(name, list(array.shape), datatype)
    tensor.set_data_from_numpy(array, binary_data=True)
    return tensor


def test_extension_advertised(client):
    assert "binary_tensor_data" in client.get_server_metadata()["extensions"]


@pytest.mark.hook("register_codecs")
def test_simple_binary_in_and_out(client):
    a = np.arange(32, dtype=np.int32).reshape(2, 16)
    b = np.ones((2, 16), dtype=np.int32)
    result = client.infer("simple", [_input("INPUT0", a, "INT32"), _input("INPUT1", b, "INT32")])
    outputs = result.get_response()["outputs"]
    assert all(o["parameters"]["binary_data_size"] == 128 for o in outputs)  # binary by default
    assert np.array_equal(result.as_numpy("OUTPUT0"), a + b)
    assert np.array_equal(result.as_numpy("OUTPUT1"), a - b)


def test_simple_string_mixed_binary_and_json_outputs(client):
    text = np.array([[str(i).encode() for i in range(16)]], dtype=object)
    outputs = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=True),
               httpclient.InferRequestedOutput("OUTPUT1", binary_data=False)]  # fmt: skip
    inputs = [_input("INPUT0", text, "BYTES"), _input("INPUT1", text, "BYTES")]
    result = client.infer("simple_string", inputs, outputs=outputs)
    first, second = result.get_response()["outputs"]
    assert "binary_data_size" in first["parameters"]
    assert "parameters" not in second  # perf_analyzer reads any parameters key as binary
    assert [x.decode() for x in result.as_numpy("OUTPUT0").reshape(-1)] == [str(2 * i) for i in range(16)]
    assert result.as_numpy("OUTPUT1").reshape(-1).tolist() == ["0"] * 16


def test_identity_fp16_binary(client):
    data = np.array([0.5, -1.25, 65504.0, np.inf], dtype=np.float16)
    result = client.infer("identity_fp16", [_input("INPUT0", data, "FP16")])
    assert result.as_numpy("OUTPUT0").dtype == np.float16
    assert np.array_equal(result.as_numpy("OUTPUT0"), data)


def test_identity_bytes_round_trip_exactly(client):
    data = np.array([b"\x00", b"a\x00b\x00", b"\xff\xfe\xfd", b"", "é".encode()], dtype=object)
    result = client.infer("identity_bytes", [_input("INPUT0", data, "BYTES")])
    assert result.as_numpy("OUTPUT0").tolist() == data.tolist()


def test_raw_binary_request(server):
    data = np.array([1.0, 2.5, -3.0], dtype="<f4")
    status, headers, body = post(server.http_port, "/v2/models/identity_fp32/infer",
                                  data.tobytes(), {HEADER: "0"})  # fmt: skip
    assert status == 200, body
    doc = json.loads(body)
    assert doc["outputs"][0]["shape"] == [3] and doc["outputs"][0]["data"] == [1.0, 2.5, -3.0]


def _binary_simple_body(size: int = 64, extra: bytes = b"") -> tuple[bytes, int]:
    inputs = [{"name": n, "datatype": "INT32", "shape": [1, 16],
               "parameters": {"binary_data_size": size}} for n in ("INPUT0", "INPUT1")]  # fmt: skip
    head = json.dumps({"inputs": inputs}).encode()
    return head + b"\0" * 128 + extra, len(head)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"size": 200}, "past the end of the body"),
        ({"size": 60}, "60 bytes, expected 64"),
        ({"header": "999999"}, "inference header size should be in range"),
        ({"header": "twelve"}, "Unable to parse"),
        ({"header": "-1"}, "inference header size should be in range"),
        ({"extra": b"\1\2"}, "2 bytes after the last binary input"),
    ],
)
def test_bad_binary_requests(server, client, change, message):
    body, length = _binary_simple_body(change.get("size", 64), change.get("extra", b""))
    headers = {HEADER: change.get("header", str(length))}
    status, _, reply = post(server.http_port, "/v2/models/simple/infer", body, headers)
    assert status == 400
    assert message in json.loads(reply)["error"]
    assert client.is_server_live()


def test_malformed_bytes_length_prefix(server):
    blob = b"\x10\x00\x00\x00abc"  # claims 16 bytes, carries 3
    inputs = [{"name": "INPUT0", "datatype": "BYTES", "shape": [1],
               "parameters": {"binary_data_size": len(blob)}}]  # fmt: skip
    head = json.dumps({"inputs": inputs}).encode()
    status, _, reply = post(server.http_port, "/v2/models/identity_bytes/infer", head + blob,
                             {HEADER: str(len(head))})  # fmt: skip
    assert status == 400
    assert "INPUT0" in json.loads(reply)["error"]


def test_without_the_plugin_binary_requests_get_400():
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple")
    with ServerProcess(*args, "--disable-plugin", "binary-data") as process:
        with httpclient.InferenceServerClient(process.http_url) as plain:
            assert "binary_tensor_data" not in plain.get_server_metadata()["extensions"]
        body, length = _binary_simple_body()
        status, _, reply = post(process.http_port, "/v2/models/simple/infer", body,
                                 {HEADER: str(length)})  # fmt: skip
        assert status == 400
        assert "binary tensor data extension is not enabled" in json.loads(reply)["error"]
