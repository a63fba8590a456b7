"""gzip/deflate request bodies (bounded inflation) and compressed responses."""

from __future__ import annotations

import gzip
import http.client
import json
import zlib

import pytest

from modelplatform.testing import ServerProcess

BODY = json.dumps(
    {
        "inputs": [
            {"name": n, "datatype": "INT32", "shape": [1, 16], "data": list(range(16))}
            for n in ("INPUT0", "INPUT1")
        ]
    }
).encode()
ENCODERS = {"gzip": gzip.compress, "deflate": zlib.compress}
DECODERS = {"gzip": gzip.decompress, "deflate": zlib.decompress}
LIMIT = 1024 * 1024


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    host, port = url.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request("POST", "/v2/models/simple/infer", body=body, headers=headers)
        reply = connection.getresponse()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read()
    finally:
        connection.close()


@pytest.fixture(scope="module")
def small_limit_server(tmp_path_factory):
    """A server whose body limit (1 MiB) a small compressed body can exceed when inflated."""
    from tests.conftest import MODEL_REPOSITORY

    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple")
    with ServerProcess(*args, "--max-request-bytes", str(LIMIT)) as process:
        yield process


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_compressed_request_and_response(server, encoding):
    headers = {"Content-Encoding": encoding, "Accept-Encoding": encoding}
    status, headers, body = _post(server.http_url, ENCODERS[encoding](BODY), headers)
    assert status == 200
    assert headers["content-encoding"] == encoding
    doc = json.loads(DECODERS[encoding](body))
    assert doc["outputs"][0]["data"] == [2 * i for i in range(16)]


@pytest.mark.hook("register_http_dialects")
def test_identity_response_without_accept_encoding(server):
    status, headers, body = _post(server.http_url, BODY, {})
    assert status == 200 and "content-encoding" not in headers
    assert json.loads(body)["model_name"] == "simple"


def test_compression_bomb_refused_at_the_limit(small_limit_server):
    bomb = gzip.compress(b" " * (64 * LIMIT))  # 64 MiB of spaces in ~64 KiB
    assert len(bomb) < LIMIT
    status, _, body = _post(small_limit_server.http_url, bomb, {"Content-Encoding": "gzip"})
    assert status == 413
    assert "over the limit" in json.loads(body)["error"]
    status, _, _ = _post(small_limit_server.http_url, BODY, {})
    assert status == 200  # still serving


@pytest.mark.parametrize(
    "body, encoding, message",
    [
        (gzip.compress(BODY)[:-12], "gzip", "truncated"),
        (b"not gzip at all", "gzip", "cannot decompress"),
        (BODY, "br", "unsupported Content-Encoding"),
    ],
)
def test_bad_compressed_bodies(server, body, encoding, message):
    status, _, reply = _post(server.http_url, body, {"Content-Encoding": encoding})
    assert status == 400
    assert message in json.loads(reply)["error"]
