"""``platform serve --single-port``: HTTP/1.1 and gRPC (h2c) on the HTTP port, real clients only.

Every gRPC client here is given the HTTP port; the gRPC port is never opened.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import grpc
import numpy as np
import pytest
import tritonclient.http as httpclient
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from modelplatform.frontends.oneport import HTTP2_PREFACE
from modelplatform.testing import ServerProcess
from modelplatform_grps.protos import grps_pb2_grpc
from modelplatform_grps.protos.grps_pb2 import GrpsMessage
from modelplatform_tfserving.protos import services_pb2_grpc as tf_services
from modelplatform_tfserving.protos import serving_apis_pb2 as apis
from modelplatform_tfserving.protos import tensorflow_pb2 as tf

from ..conftest import MODEL_REPOSITORY
from ..http_wire import get_status
from .test_drain import (
    DELAY,
    EXIT_MARGIN,
    TIMEOUT,
    Background,
    drained,
    grpc_sleep,
    http_sleep,
    sleepy_repository,
    terminate,
    wait_exit,
    wait_ready,
)  # fmt: skip

__all__ = ["sleepy_repository"]  # a fixture: imported to be used

PROBE = Path(__file__).with_name("single_port_probe.py")
HALF = "saved_model_half_plus_three"
#: Short, so that a stalled connection's close is seen quickly.
REQUEST_TIMEOUT_S = 2


@pytest.fixture(scope="module")
def one_port():
    args = ("--model-repository", str(MODEL_REPOSITORY), "--single-port",
            "--http-request-timeout-secs", str(REQUEST_TIMEOUT_S))  # fmt: skip
    with ServerProcess(*args) as server:
        yield server


def test_the_grpc_port_is_not_opened(one_port):
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", one_port.grpc_port), timeout=5).close()
    assert "single_port_enabled" in one_port.log()


def test_tritonclient_grpc_on_the_http_port(one_port):
    done = subprocess.run(
        [sys.executable, str(PROBE), one_port.http_url], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    probe = json.loads(done.stdout)
    assert (probe["live"], probe["ready"], probe["model_ready"]) == (True, True, True)
    assert probe["server_name"] == "modelplatform"
    assert probe["model_inputs"] == ["INPUT0", "INPUT1"]
    assert probe["simple"] == [[[i + 3 for i in range(16)]], [[i - 3 for i in range(16)]]]
    assert probe["large_equal"] is True  # 16 MiB each way through the splice
    assert probe["stream"] == ["s0", "s1", "s2"]  # ModelStreamInfer


def test_tritonclient_http_on_the_same_port(one_port):
    client = httpclient.InferenceServerClient(one_port.http_url, network_timeout=120)
    try:
        assert client.is_server_live() and client.is_server_ready() and client.is_model_ready("simple")
        assert client.get_server_metadata()["name"] == "modelplatform"
        assert [i["name"] for i in client.get_model_metadata("simple")["inputs"]] == ["INPUT0", "INPUT1"]
        a = np.arange(16, dtype=np.int32).reshape(1, 16)
        result = client.infer("simple", [_http_input("INPUT0", a), _http_input("INPUT1", a)])
        assert result.as_numpy("OUTPUT0").tolist() == (a * 2).tolist()
        large = np.random.default_rng(3).random(4 * 1024 * 1024, dtype=np.float32)  # 16 MiB
        outputs = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=True)]
        echoed = client.infer("identity_fp32", [_http_input("INPUT0", large)], outputs=outputs)
        assert np.array_equal(echoed.as_numpy("OUTPUT0"), large)
    finally:
        client.close()


def _http_input(name: str, array: np.ndarray) -> httpclient.InferInput:
    tensor = httpclient.InferInput(name, list(array.shape), "INT32" if array.dtype == np.int32 else "FP32")
    tensor.set_data_from_numpy(array, binary_data=True)
    return tensor


def test_tf_serving_rest_and_grpc_on_the_same_port(one_port):
    body = json.dumps({"instances": [1.0, 2.0, 5.0]}).encode()
    connection = _http(one_port)
    connection.request("POST", f"/v1/models/{HALF}:predict", body=body)
    reply = connection.getresponse()
    assert reply.status == 200 and json.loads(reply.read()) == {"predictions": [3.5, 4.0, 5.5]}
    connection.close()
    with grpc.insecure_channel(one_port.http_url) as channel:
        request = apis.PredictRequest(model_spec=apis.ModelSpec(name=HALF))
        x = np.array([1.0, 2.0, 5.0], dtype=np.float32)
        request.inputs["x"].CopyFrom(tf.TensorProto(dtype=tf.DT_FLOAT, tensor_content=x.tobytes()))
        request.inputs["x"].tensor_shape.dim.add(size=3)
        response = tf_services.PredictionServiceStub(channel).Predict(request, timeout=30)
        y = np.frombuffer(response.outputs["y"].tensor_content, dtype=np.float32)
        assert y.tolist() == [3.5, 4.0, 5.5]
        status = tf_services.ModelServiceStub(channel).GetModelStatus(
            apis.GetModelStatusRequest(model_spec=apis.ModelSpec(name=HALF)), timeout=30
        )
        assert [v.state for v in status.model_version_status] == [apis.ModelVersionStatus.AVAILABLE]


def test_grps_streaming_and_grpc_health_on_the_same_port(one_port):
    with grpc.insecure_channel(one_port.http_url) as channel:
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=30)
        assert health.status == health_pb2.HealthCheckResponse.SERVING
        request = GrpsMessage(model="stream_counter")
        request.gmap.s_i32["COUNT"] = 5
        replies = list(grps_pb2_grpc.GrpsServiceStub(channel).PredictStreaming(request, timeout=30))
        assert [list(r.gtensors.tensors[0].flat_int32) for r in replies] == [[1], [2], [3], [4], [5]]
        metadata = grps_pb2_grpc.GrpsServiceStub(channel).ServerMetadata(GrpsMessage(), timeout=30)
    settings = yaml.safe_load(metadata.str_data)["settings"]
    assert settings["grpc_port"] == settings["http_port"] == one_port.http_port  # where gRPC really is


def test_a_stalled_preface_is_closed_after_the_request_timeout(one_port):
    with socket.create_connection(("127.0.0.1", one_port.http_port), timeout=30) as sock:
        sock.sendall(HTTP2_PREFACE[:10])  # could still become gRPC: the server must wait, then give up
        started = time.monotonic()
        assert sock.recv(1024) == b""  # closed, nothing said
        waited = time.monotonic() - started
    assert REQUEST_TIMEOUT_S * 0.8 <= waited < REQUEST_TIMEOUT_S + 20
    assert get_status(one_port.http_port, "/v2/health/live") == 200


def test_garbage_is_answered_by_the_http_server_as_before(one_port):
    with socket.create_connection(("127.0.0.1", one_port.http_port), timeout=30) as sock:
        sock.sendall(b"PRIX * HTTP/2.0\r\n\r\n")  # starts like the preface, then is not
        answer = _read_all(sock)
    assert re.match(rb"HTTP/1\.1 4\d\d ", answer), answer[:200]


def test_a_preface_followed_by_garbage_is_closed_by_the_grpc_server(one_port):
    with socket.create_connection(("127.0.0.1", one_port.http_port), timeout=30) as sock:
        sock.sendall(HTTP2_PREFACE + b"\x00\x00\x04garbage-not-a-frame" * 4)
        _read_all(sock)  # the gRPC server says GOAWAY (or nothing) and hangs up: no hang
    assert get_status(one_port.http_port, "/v2/health/ready") == 200


def test_http_requests_pipelined_in_the_first_packet_are_all_answered(one_port):
    request = b"GET /v2/health/live HTTP/1.1\r\nhost: x\r\n\r\n"
    with socket.create_connection(("127.0.0.1", one_port.http_port), timeout=30) as sock:
        sock.sendall(request * 2 + b"GET /v2/health/live HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        answer = _read_all(sock)
    assert answer.count(b"HTTP/1.1 200 ") == 3


def test_an_http_request_that_arrives_one_byte_at_a_time_is_served(one_port):
    """``P`` could start the preface: the connection is sorted only at ``O``, and nothing is lost."""
    body = json.dumps({"instances": [1.0]}).encode()
    request = (f"POST /v1/models/{HALF}:predict HTTP/1.1\r\nhost: x\r\nconnection: close\r\n"
               f"content-length: {len(body)}\r\n\r\n").encode() + body  # fmt: skip
    with socket.create_connection(("127.0.0.1", one_port.http_port), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for index in range(4):
            sock.sendall(request[index : index + 1])
            time.sleep(0.05)
        sock.sendall(request[4:])
        answer = _read_all(sock)
    head, _, reply = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and json.loads(reply) == {"predictions": [3.5]}, answer[-300:]


def _http(server: ServerProcess):
    import http.client

    return http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_workers_share_the_one_port_and_remove_their_sockets_on_exit():
    args = ("--model-repository", str(MODEL_REPOSITORY), "--single-port", "--workers", "2",
            "--load-model", "simple")  # fmt: skip
    server = ServerProcess(*args)
    with server:
        _wait_ready(server)
        for _ in range(8):  # fresh connections: the kernel spreads them over both workers
            assert get_status(server.http_port, "/v2/health/ready") == 200
            with grpc.insecure_channel(server.http_url) as channel:
                health = health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(), timeout=30
                )
                assert health.status == health_pb2.HealthCheckResponse.SERVING
        sockets = set(re.findall(r"grpc_address=unix:(\S+)", server.log()))
        assert len(sockets) == 2 and all(Path(path).exists() for path in sockets)
    assert server.process is not None and server.process.returncode == 0, server.log()[-3000:]
    assert not any(Path(path).parent.exists() for path in sockets)


def test_without_an_http_dialect_grpc_binds_the_http_port_itself():
    args = ("--model-repository", str(MODEL_REPOSITORY), "--single-port", "--plugins", "oip-grpc,python",
            "--load-model", "simple")  # fmt: skip
    with ServerProcess(*args) as server:
        with grpc.insecure_channel(server.http_url) as channel:
            health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=30)
        assert health.status == health_pb2.HealthCheckResponse.SERVING
        assert f"127.0.0.1:{server.http_port}" in server.log() and "single_port_enabled" not in server.log()


def _wait_ready(server: ServerProcess, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(get_status(server.http_port, "/v2/health/ready") == 200 for _ in range(8)):
            return
        time.sleep(0.2)
    raise AssertionError(f"workers never became ready:\n{server.log()[-3000:]}")


def test_the_drain_finishes_calls_on_both_protocols_of_the_one_port(sleepy_repository):
    with ServerProcess(*drained("--model-repository", str(sleepy_repository), "--single-port")) as server:
        wait_ready(server.http_port)
        finishing_http = Background(http_sleep, server.http_port, DELAY + 1.0)
        finishing_grpc = Background(grpc_sleep, server.http_port, DELAY + 1.0)
        endless_grpc = Background(grpc_sleep, server.http_port, 60.0)
        time.sleep(0.5)  # all three in flight
        terminate(server)
        code, _ = wait_exit(server, DELAY + TIMEOUT + EXIT_MARGIN)
        for call in (finishing_http, finishing_grpc, endless_grpc):
            call.join(timeout=10)
        log = server.log()
    assert finishing_http.result[0] == 200 and finishing_http.result[2] == "close", finishing_http.result
    assert finishing_grpc.result == (grpc.StatusCode.OK, "")
    assert endless_grpc.result == (grpc.StatusCode.UNAVAILABLE, "Server is shutting down")
    assert code == 0, log[-4000:]
