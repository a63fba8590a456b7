"""Deadlines and HTTP timeouts on a real server with real clients.

A request whose deadline (the OIP ``timeout`` parameter, a gRPC deadline)
passes while it waits for an instance never reaches the model, behind the
direct scheduler with one instance and with two. The `slow` models sleep
(asynchronously) for the seconds they are sent and touch ``called-<seconds>``
when a call reaches them and ``finished-<seconds>`` when it ends, so the
tests can see what ran. HTTP timeouts: a response timeout cuts a slow
inference identically on the fast lane and on the Sanic path, none is set
by default, and a client that stalls its body is cut by the request timeout.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from modelplatform.testing import ServerProcess
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc
from tests.plugins.oip.slow_model import CONFIG as SECONDS_IN_DONE_OUT

#: tritonclient.grpc cannot share a process with our protos (docs/protocols/oip-grpc.md):
#: it runs in a child that prints the call's status.
TRITONCLIENT_GRPC = """
import sys
import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

url, model, seconds, client_timeout = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
client = grpcclient.InferenceServerClient(url)
request = grpcclient.InferInput("SECONDS", [1], "FP32")
request.set_data_from_numpy(np.array([seconds], dtype=np.float32))
try:
    client.infer(model, [request], client_timeout=client_timeout)
    print("OK")
except InferenceServerException as error:
    print(error.status())
"""

MODEL = """
import asyncio
from pathlib import Path


class Model:
    async def infer(self, inputs):
        seconds = float(inputs["SECONDS"][0])
        here = Path(__file__).parent
        (here / f"called-{seconds}").touch()
        await asyncio.sleep(seconds)
        (here / f"finished-{seconds}").touch()
        return {"DONE": inputs["SECONDS"]}
"""


#: model name -> instance count: the direct scheduler with one instance, and with two.
MODELS = {"slow_one": 1, "slow_two": 2}


@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("repository")
    for name, count in MODELS.items():
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(SECONDS_IN_DONE_OUT.format(name=name, instances=count))
        (root / name / "1" / "model.py").write_text(MODEL)
    return root


@pytest.fixture(scope="module")
def server(repository):
    with ServerProcess("--model-repository", str(repository)) as process:
        yield process


def _called(repository: Path, model: str, seconds: float) -> bool:
    return (repository / model / "1" / f"called-{seconds}").exists()


def _finished(repository: Path, model: str, seconds: float) -> bool:
    return (repository / model / "1" / f"finished-{seconds}").exists()


def _body(seconds: float, **parameters) -> bytes:
    request = {"inputs": [{"name": "SECONDS", "datatype": "FP32", "shape": [1], "data": [seconds]}]}
    if parameters:
        request["parameters"] = parameters
    return json.dumps(request).encode()


def _post(port: int, model: str, body: bytes, timeout: float = 30) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("POST", f"/v2/models/{model}/infer", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()


def _occupy(port: int, model: str, seconds: list[float]) -> list[threading.Thread]:
    """Keep every instance of ``model`` busy: one slow request each, in threads."""
    threads = [threading.Thread(target=_post, args=(port, model, _body(s))) for s in seconds]
    for thread in threads:
        thread.start()
    return threads


def _grpc_infer(url: str, model: str, seconds: float) -> None:
    request = pb.ModelInferRequest(model_name=model)
    request.inputs.add(name="SECONDS", datatype="FP32", shape=[1])
    request.raw_input_contents.append(np.float32(seconds).tobytes())
    with grpc.insecure_channel(url) as channel:
        pb_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request, timeout=30)


def _wait_called(repository: Path, model: str, seconds: list[float]) -> None:
    give_up = time.monotonic() + 20
    while not all(_called(repository, model, s) for s in seconds):
        assert time.monotonic() < give_up, "the occupying requests never reached the model"
        time.sleep(0.02)


@pytest.mark.parametrize("model", list(MODELS))
def test_expired_timeout_parameter_never_reaches_the_model_over_http(server, repository, model):
    busy = [2.0 + i / 8 for i in range(MODELS[model])]  # distinct values: distinct markers
    threads = _occupy(server.http_port, model, busy)
    _wait_called(repository, model, busy)
    started = time.monotonic()
    status, answer = _post(server.http_port, model, _body(0.25, timeout=300_000))  # 0.3 s, in microseconds
    took = time.monotonic() - started
    assert (status, answer) == (503, {"error": "Request timeout expired"})  # Triton's answer
    assert took < 1.8, f"answered after {took:.2f}s: at the deadline, not when an instance freed"
    for thread in threads:
        thread.join(30)
    time.sleep(0.5)  # an instance freed: a request wrongly still queued would run now
    assert not _called(repository, model, 0.25)


@pytest.mark.parametrize("model", list(MODELS))
def test_missed_grpc_deadline_never_reaches_the_model(server, repository, model):
    busy = [2.5 + i / 8 for i in range(MODELS[model])]
    threads = _occupy(server.http_port, model, busy)
    _wait_called(repository, model, busy)
    child = [sys.executable, "-c", TRITONCLIENT_GRPC, server.grpc_url, model, "0.375", "0.3"]
    done = subprocess.run(child, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "StatusCode.DEADLINE_EXCEEDED"
    for thread in threads:
        thread.join(30)
    time.sleep(0.5)
    assert not _called(repository, model, 0.375)


def test_tritonclient_http_sees_the_timeout_error(server, repository):
    threads = _occupy(server.http_port, "slow_one", [1.75])
    _wait_called(repository, "slow_one", [1.75])
    client = httpclient.InferenceServerClient(server.http_url, network_timeout=30)
    request = httpclient.InferInput("SECONDS", [1], "FP32")
    request.set_data_from_numpy(np.array([0.4375], dtype=np.float32), binary_data=False)
    with pytest.raises(InferenceServerException, match="Request timeout expired") as caught:
        client.infer("slow_one", [request], timeout=200_000)
    assert caught.value.status() == "503"
    for thread in threads:
        thread.join(30)
    assert not _called(repository, "slow_one", 0.4375)
    client.close()


def test_bad_timeout_parameter_is_a_400(server):
    status, answer = _post(server.http_port, "slow_one", _body(0.0, timeout="soon"))
    assert status == 400 and "timeout" in answer["error"]


# ---- HTTP timeouts: the same on the fast lane and on Sanic ----

CUT_S = 0.75


@pytest.fixture(scope="module", params=["lane", "sanic"])
def timed_server(request, repository):
    """A server with a small response timeout and a small request timeout."""
    lane = ["--http-fast-lane"] if request.param == "lane" else ["--no-http-fast-lane"]
    with ServerProcess("--model-repository", str(repository), *lane,
                       "--http-response-timeout-secs", str(CUT_S),
                       "--http-request-timeout-secs", "1") as process:  # fmt: skip
        yield process


def test_response_timeout_cuts_a_slow_inference(timed_server, repository):
    seconds = 3.0 + (0.0625 if "--no-http-fast-lane" in timed_server.args else 0.0)
    started = time.monotonic()
    status, answer = _post(timed_server.http_port, "slow_two", _body(seconds))
    took = time.monotonic() - started
    assert status == 504
    assert answer == {"error": f"HTTP response timeout of {CUT_S:g} s expired"}
    assert took < seconds, f"answered after {took:.2f}s"
    time.sleep(seconds + 0.5)
    assert _called(repository, "slow_two", seconds)
    assert not _finished(repository, "slow_two", seconds), "the cut inference kept running"


def test_response_timeout_expires_queued_requests_before_the_model(timed_server, repository):
    offset = 0.0625 if "--no-http-fast-lane" in timed_server.args else 0.0
    busy = 1.5 + offset
    # Over gRPC, which the HTTP response timeout does not cut: the instance stays busy.
    occupier = threading.Thread(target=_grpc_infer, args=(timed_server.grpc_url, "slow_one", busy))
    occupier.start()
    _wait_called(repository, "slow_one", [busy])
    status, _ = _post(timed_server.http_port, "slow_one", _body(0.5 + offset))
    assert status == 504
    occupier.join(30)
    time.sleep(0.5)
    assert not _called(repository, "slow_one", 0.5 + offset)


def test_no_response_timeout_by_default(server):
    """Sanic's default (60 s, 503) is gone; a slow answer arrives whole on both paths."""
    status, answer = _post(server.http_port, "slow_two", _body(CUT_S + 0.5))
    assert status == 200 and answer["outputs"][0]["data"] == [CUT_S + 0.5]


def test_stalled_body_is_cut_by_the_request_timeout(timed_server):
    body = _body(0.0)
    head = (f"POST /v2/models/slow_one/infer HTTP/1.1\r\nHost: t\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")  # fmt: skip
    with socket.create_connection(("127.0.0.1", timed_server.http_port), timeout=15) as sock:
        started = time.monotonic()
        sock.sendall(head.encode() + body[:10])  # then nothing more
        data = b""
        while chunk := sock.recv(65536):  # the server closes the connection after answering
            data += chunk
        took = time.monotonic() - started
    status_line, _, rest = data.partition(b"\r\n")
    assert status_line.startswith(b"HTTP/1.1 408"), data
    assert b"connection: close" in rest.lower()
    assert json.loads(rest.partition(b"\r\n\r\n")[2]) == {"error": "Request Timeout"}
    assert 0.9 < took < 8, f"cut after {took:.2f}s"
