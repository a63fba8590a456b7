"""TLS and mutual TLS on every port, with real clients and certificates made in this run.

One server serves TLS on HTTP and gRPC (the metrics port follows HTTP);
another asks every client for a certificate (mutual TLS). Every dialect's
clients (tritonclient, grpc.health.v1, TF Serving and grps stubs, plain
http.client, perf_analyzer) talk to them; a client without a certificate,
or with one from another CA, is refused under mutual TLS.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest
import tritonclient.http as httpclient
from grpc_health.v1 import health_pb2, health_pb2_grpc

from modelplatform.testing import ServerProcess
from modelplatform_grps.protos import grps_pb2_grpc
from modelplatform_grps.protos.grps_pb2 import GenericTensor, GrpsMessage
from modelplatform_tfserving.protos import services_pb2_grpc as tfs_services
from modelplatform_tfserving.protos import serving_apis_pb2 as tfs_apis
from modelplatform_tfserving.protos import tensorflow_pb2 as tf

from ..conftest import MODEL_REPOSITORY
from .tls_certs import Authority

ROOT = Path(__file__).resolve().parents[2]
PERF_ANALYZER = ROOT / ".venv/perf_analyzer/perf_analyzer"
BOUNDED = ["--measurement-interval", "1000", "--stability-percentage", "999", "--max-trials", "3"]
SIMPLE_BODY = json.dumps({"inputs": [
    {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
    {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16},
]}).encode()  # fmt: skip

#: tritonclient.grpc cannot share a process with our protos (docs/protocols/oip-grpc.md):
#: it runs in a child that prints what the call gave.
TRITONCLIENT_GRPC = """
import json, sys
import numpy as np
import tritonclient.grpc as grpcclient

url, options = sys.argv[1], json.loads(sys.argv[2])
client = grpcclient.InferenceServerClient(url, ssl=True, **options)
inputs = [grpcclient.InferInput("INPUT0", [1, 16], "INT32"), grpcclient.InferInput("INPUT1", [1, 16], "INT32")]
inputs[0].set_data_from_numpy(np.arange(16, dtype=np.int32).reshape(1, 16))
inputs[1].set_data_from_numpy(np.ones((1, 16), dtype=np.int32))
try:
    live = client.is_server_live(client_timeout=15) and client.is_model_ready("simple", client_timeout=15)
    result = client.infer("simple", inputs, client_timeout=15)
    sums = result.as_numpy("OUTPUT0").tolist() == [[i + 1 for i in range(16)]]
    print("OK" if live and sums else "WRONG")
except Exception as error:
    print("FAILED", error)
"""


def tritonclient_grpc(url: str, **options: str) -> str:
    """What tritonclient.grpc (``ssl=True`` and ``options``) printed: OK, WRONG or FAILED and why."""
    command = [sys.executable, "-c", TRITONCLIENT_GRPC, url, json.dumps(options)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    return done.stdout.strip() or done.stderr[-2000:]


class Pki:
    """A CA, a server certificate, a client certificate, and a client of another CA, as files."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        authority, stranger = Authority(), Authority("someone else's CA")
        self.ca = folder / "ca.pem"
        self.ca.write_bytes(authority.pem)
        self.server_cert, self.server_key = folder / "server.crt", folder / "server.key"
        authority.server().write(self.server_cert, self.server_key)
        self.client_cert, self.client_key = folder / "client.crt", folder / "client.key"
        authority.client().write(self.client_cert, self.client_key)
        self.stranger_cert, self.stranger_key = folder / "stranger.crt", folder / "stranger.key"
        stranger.client().write(self.stranger_cert, self.stranger_key)

    def args(self, listener: str, mutual: bool = False) -> list[str]:
        switch = f"--{listener}-use-ssl-mutual" if mutual else f"--{listener}-use-ssl"
        files = [
            f"--{listener}-server-cert",
            str(self.server_cert),
            f"--{listener}-server-key",
            str(self.server_key),
        ]
        return [switch, *files, *([f"--{listener}-root-cert", str(self.ca)] if mutual else [])]

    def client_context(self, with_cert: bool = False, stranger: bool = False) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca))
        if stranger:
            context.load_cert_chain(self.stranger_cert, self.stranger_key)
        elif with_cert:
            context.load_cert_chain(self.client_cert, self.client_key)
        return context

    def grpc_credentials(self, with_cert: bool = False, stranger: bool = False) -> grpc.ChannelCredentials:
        cert, key = (
            (self.stranger_cert, self.stranger_key) if stranger else (self.client_cert, self.client_key)
        )
        if not (with_cert or stranger):
            return grpc.ssl_channel_credentials(self.ca.read_bytes())
        return grpc.ssl_channel_credentials(self.ca.read_bytes(), key.read_bytes(), cert.read_bytes())


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tls_server(pki: Pki) -> Iterator[ServerProcess]:
    args = ["--model-repository", str(MODEL_REPOSITORY), *pki.args("http"), *pki.args("grpc")]
    with ServerProcess(*args) as server:
        yield server


@pytest.fixture(scope="module")
def mtls_server(pki: Pki) -> Iterator[ServerProcess]:
    args = ["--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple"]
    with ServerProcess(*args, *pki.args("http", mutual=True), *pki.args("grpc", mutual=True)) as server:
        yield server


def https(port: int, context: ssl.SSLContext, method: str, path: str, body: bytes | None = None,
          headers: dict[str, str] | None = None) -> tuple[int, bytes]:  # fmt: skip
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        reply = connection.getresponse()
        return reply.status, reply.read()
    finally:
        connection.close()


def simple_inputs(module: object) -> list[object]:  # tritonclient.http
    inputs = [module.InferInput("INPUT0", [1, 16], "INT32"), module.InferInput("INPUT1", [1, 16], "INT32")]
    inputs[0].set_data_from_numpy(np.arange(16, dtype=np.int32).reshape(1, 16))
    inputs[1].set_data_from_numpy(np.ones((1, 16), dtype=np.int32))
    return inputs


def assert_simple(result: object) -> None:
    assert result.as_numpy("OUTPUT0").tolist() == [[i + 1 for i in range(16)]]
    assert result.as_numpy("OUTPUT1").tolist() == [[i - 1 for i in range(16)]]


# ------------------------------------------------------------------ TLS


def test_tritonclient_http_over_tls(tls_server: ServerProcess, pki: Pki) -> None:
    client = httpclient.InferenceServerClient(
        tls_server.http_url, ssl=True, ssl_options={"ca_certs": str(pki.ca)}
    )
    try:
        assert client.is_server_ready()
        assert_simple(client.infer("simple", simple_inputs(httpclient)))
        binary = simple_inputs(httpclient)
        binary[0].set_data_from_numpy(np.arange(16, dtype=np.int32).reshape(1, 16), binary_data=True)
        assert_simple(client.infer("simple", binary))
    finally:
        client.close()


def test_tritonclient_grpc_over_tls(tls_server: ServerProcess, pki: Pki) -> None:
    assert tritonclient_grpc(tls_server.grpc_url, root_certificates=str(pki.ca)) == "OK"


def test_grpc_health_over_tls(tls_server: ServerProcess, pki: Pki) -> None:
    with grpc.secure_channel(tls_server.grpc_url, pki.grpc_credentials()) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=30)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_plain_text_clients_are_not_served(tls_server: ServerProcess) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", tls_server.http_port, timeout=30)
    with pytest.raises((http.client.HTTPException, ConnectionError)):
        connection.request("GET", "/v2/health/live")
        connection.getresponse()
    connection.close()
    with grpc.insecure_channel(tls_server.grpc_url) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert refused.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def _tls_exchange(port: int, context: ssl.SSLContext, request: bytes, answers: int) -> bytes:
    """Send ``request`` (maybe several, pipelined) on one TLS connection; read until ``answers`` bodies."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as sock:
            sock.sendall(request)
            received = b""
            while received.count(b'"model_name"') < answers:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
            return received


def test_fast_lane_answers_over_tls(tls_server: ServerProcess, pki: Pki) -> None:
    head = (f"POST /v2/models/simple/infer HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(SIMPLE_BODY)}\r\n").encode()  # fmt: skip
    one = head + b"\r\n" + SIMPLE_BODY
    received = _tls_exchange(tls_server.http_port, pki.client_context(), one * 3, 3)  # pipelined, keep-alive
    assert received.count(b"HTTP/1.1 200 OK\r\n") == 3
    # The lane writes its own head, connection header first; Sanic answers the same request otherwise.
    assert received.startswith(
        b"HTTP/1.1 200 OK\r\nconnection: keep-alive\r\ncontent-type: application/json\r\n"
    )
    last = head + b"Connection: close\r\n\r\n" + SIMPLE_BODY
    closing = _tls_exchange(tls_server.http_port, pki.client_context(), last, 1)
    assert closing.startswith(b"HTTP/1.1 200 OK\r\n") and b"connection: close" in closing.lower()
    assert not closing.startswith(b"HTTP/1.1 200 OK\r\nconnection:")  # Sanic answered this one
    assert received.split(b"\r\n\r\n", 1)[1][:200] == closing.split(b"\r\n\r\n", 1)[1][:200]


def test_tfserving_rest_and_grpc_over_tls(tls_server: ServerProcess, pki: Pki) -> None:
    body = json.dumps({"instances": [1.0, 2.0, 5.0]}).encode()
    status, reply = https(tls_server.http_port, pki.client_context(), "POST",
                          "/v1/models/saved_model_half_plus_three:predict", body)  # fmt: skip
    assert status == 200 and json.loads(reply) == {"predictions": [3.5, 4.0, 5.5]}
    request = tfs_apis.PredictRequest(model_spec=tfs_apis.ModelSpec(name="saved_model_half_plus_three"))
    tensor = request.inputs["x"]
    tensor.dtype = tf.DT_FLOAT
    tensor.tensor_shape.dim.add(size=3)
    tensor.float_val.extend([1.0, 2.0, 5.0])
    with grpc.secure_channel(tls_server.grpc_url, pki.grpc_credentials()) as channel:
        response = tfs_services.PredictionServiceStub(channel).Predict(request, timeout=30)
    output = response.outputs["y"]
    values = list(output.float_val) or np.frombuffer(output.tensor_content, np.float32).tolist()
    assert values == [3.5, 4.0, 5.5]


def test_grps_rest_and_grpc_over_tls(tls_server: ServerProcess, pki: Pki) -> None:
    status, reply = https(tls_server.http_port, pki.client_context(), "GET", "/grps/v1/health/live")
    assert status == 200 and json.loads(reply)["status"]["status"] == "SUCCESS"
    tensors = GenericTensor(name="INPUT0", dtype="DT_INT32", shape=[1, 16], flat_int32=list(range(16)))
    ones = GenericTensor(name="INPUT1", dtype="DT_INT32", shape=[1, 16], flat_int32=[1] * 16)
    message = GrpsMessage(model="simple")
    message.gtensors.tensors.extend([tensors, ones])
    with grpc.secure_channel(tls_server.grpc_url, pki.grpc_credentials()) as channel:
        reply = grps_pb2_grpc.GrpsServiceStub(channel).Predict(message, timeout=30)
    sums = next(t for t in reply.gtensors.tensors if t.name == "OUTPUT0")
    assert list(sums.flat_int32) == [i + 1 for i in range(16)]


def test_metrics_port_follows_http_tls(tls_server: ServerProcess, pki: Pki) -> None:
    status, body = https(tls_server.metrics_port, pki.client_context(), "GET", "/metrics")
    assert status == 200 and b"nv_inference_count" in body
    connection = http.client.HTTPConnection("127.0.0.1", tls_server.metrics_port, timeout=30)
    with pytest.raises((http.client.HTTPException, ConnectionError)):
        connection.request("GET", "/metrics")
        connection.getresponse()
    connection.close()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_perf_analyzer_over_tls(tls_server: ServerProcess, pki: Pki, protocol: str) -> None:
    if not PERF_ANALYZER.exists():
        pytest.skip("perf_analyzer is missing: run `make perf-analyzer`")
    if protocol == "grpc":
        url = tls_server.grpc_url
        flags = ["--ssl-grpc-use-ssl", "true", "--ssl-grpc-root-certifications-file", str(pki.ca)]
    else:
        url, flags = (
            f"https://localhost:{tls_server.http_port}",
            ["--ssl-https-ca-certificates-file", str(pki.ca)],
        )
    command = [str(PERF_ANALYZER), "-m", "simple", "-i", protocol, "-u", url, *flags, *BOUNDED]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Throughput:" in done.stdout


# ------------------------------------------------------------------ mutual TLS


def test_tritonclient_http_with_a_client_certificate(mtls_server: ServerProcess, pki: Pki) -> None:
    options = {"ca_certs": str(pki.ca), "certfile": str(pki.client_cert), "keyfile": str(pki.client_key)}
    client = httpclient.InferenceServerClient(mtls_server.http_url, ssl=True, ssl_options=options)
    try:
        assert_simple(client.infer("simple", simple_inputs(httpclient)))
    finally:
        client.close()


@pytest.mark.parametrize("stranger", [False, True], ids=["no-certificate", "other-ca"])
def test_http_client_refused_without_a_trusted_certificate(
    mtls_server: ServerProcess, pki: Pki, stranger: bool
) -> None:
    with pytest.raises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
        https(mtls_server.http_port, pki.client_context(stranger=stranger), "GET", "/v2/health/ready")
    assert (
        https(mtls_server.http_port, pki.client_context(with_cert=True), "GET", "/v2/health/ready")[0] == 200
    )


def test_tritonclient_http_without_a_certificate_is_refused(mtls_server: ServerProcess, pki: Pki) -> None:
    client = httpclient.InferenceServerClient(
        mtls_server.http_url, ssl=True, ssl_options={"ca_certs": str(pki.ca)}
    )
    try:
        with pytest.raises(Exception):  # noqa: B017 - gevent's SSL or connection error, never an answer
            client.is_server_ready()
    finally:
        client.close()


def test_tritonclient_grpc_with_and_without_a_client_certificate(
    mtls_server: ServerProcess, pki: Pki
) -> None:
    client = {"private_key": str(pki.client_key), "certificate_chain": str(pki.client_cert)}
    assert tritonclient_grpc(mtls_server.grpc_url, root_certificates=str(pki.ca), **client) == "OK"
    refused = tritonclient_grpc(mtls_server.grpc_url, root_certificates=str(pki.ca))
    assert refused.startswith("FAILED") and ("UNAVAILABLE" in refused or "DEADLINE" in refused), refused


def test_grpc_client_of_another_ca_is_refused(mtls_server: ServerProcess, pki: Pki) -> None:
    with grpc.secure_channel(mtls_server.grpc_url, pki.grpc_credentials(stranger=True)) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert refused.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    with grpc.secure_channel(mtls_server.grpc_url, pki.grpc_credentials(with_cert=True)) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=30)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_metrics_port_follows_http_mutual_tls(mtls_server: ServerProcess, pki: Pki) -> None:
    assert https(mtls_server.metrics_port, pki.client_context(with_cert=True), "GET", "/metrics")[0] == 200
    with pytest.raises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
        https(mtls_server.metrics_port, pki.client_context(), "GET", "/metrics")
