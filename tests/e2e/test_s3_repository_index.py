"""The index of an ``s3://`` repository lists the bucket as it is now (moto, IAM auth on).

Models uploaded after start-up are listed before anything loads or polls them
in, one deleted from the bucket leaves the index, and a store that fails or
hangs answers UNAVAILABLE naming the URL within a bounded time, over HTTP
(503, Triton's ``{"error": ...}``) and gRPC.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from urllib.parse import urlsplit

import grpc
import pytest
import tritonclient.http as httpclient

from modelplatform.testing import ServerProcess, free_port
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc
from tests.conftest import MODEL_REPOSITORY
from tests.plugins.storage.s3_server import MotoServer, serving_a_lost_store

pytestmark = [pytest.mark.hook("open_repository"), pytest.mark.timeout(300)]

#: The server's wait for a listing (LISTING_TIMEOUT_S) plus a loaded machine's margin.
ANSWER_WITHIN_S = 45.0


@pytest.fixture
def bucket(s3: MotoServer) -> str:
    """A fresh bucket holding models/simple (a repository must hold something at start)."""
    return s3.bucket_holding("index", MODEL_REPOSITORY / "simple")


def _http_index(server: ServerProcess, ready: bool = False) -> list[dict[str, str]]:
    client = httpclient.InferenceServerClient(server.http_url)
    if ready:
        return json.loads(_post(server, "/v2/repository/index", {"ready": True})[1])
    return client.get_model_repository_index()


def _grpc_index(server: ServerProcess, ready: bool = False) -> list[tuple[str, str, str]]:
    with grpc.insecure_channel(server.grpc_url) as channel:
        reply = pb_grpc.GRPCInferenceServiceStub(channel).RepositoryIndex(
            pb.RepositoryIndexRequest(ready=ready), timeout=ANSWER_WITHIN_S
        )
    return [(m.name, m.version, m.state) for m in reply.models]


def _post(server: ServerProcess, path: str, body: dict) -> tuple[int, bytes]:
    address = urlsplit(f"http://{server.http_url}")
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=ANSWER_WITHIN_S)
    try:
        connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        reply = connection.getresponse()
        return reply.status, reply.read()
    finally:
        connection.close()


def _delete_model(s3: MotoServer, bucket: str, name: str) -> None:
    client = s3.client()
    for item in client.list_objects_v2(Bucket=bucket, Prefix=f"models/{name}/")["Contents"]:
        client.delete_object(Bucket=bucket, Key=item["Key"])


def test_the_index_lists_every_model_of_the_bucket_loaded_or_not(s3, bucket, tmp_path):
    url = f"s3://127.0.0.1:{s3.port}/{bucket}/models"
    config = tmp_path / "serve.toml"
    config.write_text("load_models = []\n")  # explicit mode, nothing loaded at start
    args = ("--config", str(config), "--model-repository", url, "--model-control-mode", "explicit")
    with ServerProcess(*args, env=s3.keys.env()) as server:
        # Uploaded after start-up: in the bucket only, never fetched into the mirror.
        s3.upload(bucket, "models", MODEL_REPOSITORY / "identity_fp32")
        s3.upload(bucket, "models", MODEL_REPOSITORY / "identity_bytes")
        names = ["identity_bytes", "identity_fp32", "simple"]
        assert _http_index(server) == [{"name": name} for name in names]
        assert _grpc_index(server) == [(name, "", "") for name in names]
        assert _http_index(server, ready=True) == []
        assert _grpc_index(server, ready=True) == []

        httpclient.InferenceServerClient(server.http_url).load_model("identity_fp32")
        assert _http_index(server) == [
            {"name": "identity_bytes"},
            {"name": "identity_fp32", "version": "1", "state": "READY"},
            {"name": "simple"},
        ]
        assert _grpc_index(server) == [
            ("identity_bytes", "", ""),
            ("identity_fp32", "1", "READY"),
            ("simple", "", ""),
        ]
        assert _http_index(server, ready=True) == [
            {"name": "identity_fp32", "version": "1", "state": "READY"}
        ]
        assert _grpc_index(server, ready=True) == [("identity_fp32", "1", "READY")]

        _delete_model(s3, bucket, "simple")  # mirrored at start-up, gone from the bucket now
        left = ["identity_bytes", "identity_fp32"]
        assert [entry["name"] for entry in _http_index(server)] == left
        assert [name for name, _, _ in _grpc_index(server)] == left


@pytest.mark.parametrize("mode", ["none", "poll"])
def test_the_index_lists_a_model_uploaded_later_in_every_control_mode(s3, bucket, mode):
    url = f"s3://127.0.0.1:{s3.port}/{bucket}/models"
    args = ("--model-repository", url, "--model-control-mode", mode,
            "--repository-poll-secs", "3600")  # fmt: skip
    with ServerProcess(*args, env=s3.keys.env()) as server:
        s3.upload(bucket, "models", MODEL_REPOSITORY / "identity_fp32")
        assert _http_index(server) == [
            {"name": "identity_fp32"},
            {"name": "simple", "version": "1", "state": "READY"},
        ]


def _assert_unavailable_naming(server: ServerProcess, url: str, words: str) -> None:
    """HTTP 503 with Triton's error shape and gRPC UNAVAILABLE, each within the bound."""
    started = time.monotonic()
    status, body = _post(server, "/v2/repository/index", {})
    assert status == 503, body
    message = json.loads(body)["error"]
    assert url in message and words in message, message
    with pytest.raises(grpc.RpcError) as refused:
        _grpc_index(server)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert url in refused.value.details() and words in refused.value.details()
    assert time.monotonic() - started < 2 * ANSWER_WITHIN_S
    # Only the index needs the store: a loaded model still answers, the filter still works.
    assert _grpc_index(server, ready=True) == [("simple", "1", "READY")]


def test_an_unreachable_store_answers_unavailable_naming_the_url(bucket):
    server, url = serving_a_lost_store(MODEL_REPOSITORY / "simple")  # the module's store serves on
    try:
        _assert_unavailable_naming(server, url, "cannot reach the storage endpoint")
    finally:
        server.stop()


class StallingRelay:
    """A TCP relay to the S3 server that can go silent: a store that hangs rather than refuses."""

    def __init__(self, target_port: int) -> None:
        self._target = target_port
        self._listener = socket.create_server(("127.0.0.1", free_port()))
        self.port = self._listener.getsockname()[1]
        self.stalled = threading.Event()
        self._sockets: list[socket.socket] = [self._listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(("127.0.0.1", self._target))
            self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                if not self.stalled.is_set():  # stalled: what is sent is swallowed, nothing answers
                    sink.sendall(data)
        except OSError:
            pass


def test_a_store_that_hangs_answers_unavailable_within_the_bound(s3, bucket):
    relay = StallingRelay(s3.port)
    url = f"s3://127.0.0.1:{relay.port}/{bucket}/models"
    try:
        with ServerProcess("--model-repository", url, "--model-control-mode", "explicit",
                           "--load-model", "simple", env=s3.keys.env()) as server:  # fmt: skip
            assert _http_index(server) == [{"name": "simple", "version": "1", "state": "READY"}]
            relay.stalled.set()
            _assert_unavailable_naming(server, url, "did not finish within")
    finally:
        relay.close()
