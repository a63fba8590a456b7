"""``platform serve --workers 2``: shared ports, relayed model operations, joint readiness.

Every check opens fresh connections: SO_REUSEPORT spreads them over both
workers, so a state held by one worker only shows up as a mix of answers.
"""

from __future__ import annotations

import http.client
import json
import shutil
import time
from pathlib import Path

import grpc
import pytest

from modelplatform.testing import ServerProcess
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc

from ..conftest import MODEL_REPOSITORY

CONNECTIONS = 16

#: Loads in the first worker that claims it; the second one fails (a per-worker difference).
CLAIMED_ONCE = """
import os


class Model:
    def load(self, config, version_dir):
        os.close(os.open(os.path.join(version_dir, "claimed"), os.O_CREAT | os.O_EXCL))

    def infer(self, inputs):
        return {"OUTPUT0": inputs["INPUT0"]}
"""


def request(port: int, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    """One request on its own new connection."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=body)
        reply = connection.getresponse()
        return reply.status, reply.read()
    finally:
        connection.close()


def statuses(port: int, path: str) -> set[int]:
    return {request(port, "GET", path)[0] for _ in range(CONNECTIONS)}


def wait_ready(server: ServerProcess, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if statuses(server.http_port, "/v2/health/ready") == {200}:
            return
        time.sleep(0.1)
    raise AssertionError(f"workers never became ready:\n{server.log()[-3000:]}")


@pytest.fixture(scope="module")
def workers():
    args = ("--model-repository", str(MODEL_REPOSITORY), "--workers", "2", "--load-model", "simple")
    with ServerProcess(*args) as server:
        wait_ready(server)
        yield server


def test_statistics_are_the_sums_over_every_worker(workers):
    before = simple_stats(workers)
    for _ in range(CONNECTIONS):
        assert request(workers.http_port, "POST", "/v2/models/simple/infer", simple_body())[0] == 200
    # Every read, on its own connection (so on either worker), sees every request.
    for _ in range(CONNECTIONS // 2):
        stats = simple_stats(workers)
        assert stats["inference_count"] == before["inference_count"] + CONNECTIONS
        assert (
            stats["inference_stats"]["success"]["count"]
            == before["inference_stats"]["success"]["count"] + CONNECTIONS
        )
    for _ in range(CONNECTIONS // 2):
        with grpc.insecure_channel(workers.grpc_url) as channel:
            reply = pb_grpc.GRPCInferenceServiceStub(channel).ModelStatistics(
                pb.ModelStatisticsRequest(name="simple", version="1")
            )
        assert reply.model_stats[0].inference_count == before["inference_count"] + CONNECTIONS
        assert reply.model_stats[0].execution_count == before["execution_count"] + CONNECTIONS


def simple_stats(server: ServerProcess) -> dict:
    status, body = request(server.http_port, "GET", "/v2/models/simple/versions/1/stats")
    assert status == 200, body
    (stats,) = json.loads(body)["model_stats"]
    return stats


def test_load_and_unload_through_one_worker_reach_every_worker(workers):
    status, body = request(workers.http_port, "POST", "/v2/repository/models/identity_fp32/load")
    assert status == 200, body
    assert statuses(workers.http_port, "/v2/models/identity_fp32/ready") == {200}
    infer = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [2], "data": [1, 2]}]})
    for _ in range(CONNECTIONS):
        status, body = request(workers.http_port, "POST", "/v2/models/identity_fp32/infer", infer.encode())
        assert status == 200 and json.loads(body)["outputs"][0]["data"] == [1.0, 2.0]
    status, body = request(workers.http_port, "POST", "/v2/repository/models/identity_fp32/unload")
    assert status == 200, body
    assert statuses(workers.http_port, "/v2/models/identity_fp32/ready") == {400}


def test_not_ready_while_any_worker_is_not(tmp_path: Path):
    repository = tmp_path / "repo"
    shutil.copytree(MODEL_REPOSITORY / "identity_fp32", repository / "once")
    config = repository / "once" / "config.pbtxt"
    config.write_text(config.read_text().replace('"identity_fp32"', '"once"'))
    (repository / "once" / "1" / "model.py").write_text(CLAIMED_ONCE)
    args = ("--model-repository", str(repository), "--workers", "2", "--load-model", "once")
    with ServerProcess(*args) as server:
        deadline = time.monotonic() + 60
        while server.log().count("server_started") < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)  # readiness reports travel every 50 ms
        # One worker has the model and would be ready alone; the server is not.
        assert statuses(server.http_port, "/v2/models/once/ready") == {200, 400}
        assert statuses(server.http_port, "/v2/health/ready") == {400}
        status, body = request(server.http_port, "POST", "/v2/repository/models/once/unload")
        assert status == 200, body
        wait_ready(server)


def simple_body() -> bytes:
    tensor = {"datatype": "INT32", "shape": [1, 16], "data": list(range(16))}
    return json.dumps({"inputs": [{"name": "INPUT0", **tensor}, {"name": "INPUT1", **tensor}]}).encode()


def logging_settings(port: int) -> dict:
    status, body = request(port, "GET", "/v2/logging")
    assert status == 200, body
    return json.loads(body)


def test_a_log_level_change_through_one_worker_reaches_every_worker(workers):
    port = workers.http_port
    assert {logging_settings(port)["log_verbose_level"] for _ in range(CONNECTIONS)} == {0}
    status, body = request(port, "POST", "/v2/logging", b'{"log_verbose_level": 1}')
    assert status == 200, body
    assert {logging_settings(port)["log_verbose_level"] for _ in range(CONNECTIONS)} == {1}
    # The gRPC LogSettings, too, and back.
    with grpc.insecure_channel(workers.grpc_url) as channel:
        setting = pb.LogSettingsRequest.SettingValue(uint32_param=0)
        pb_grpc.GRPCInferenceServiceStub(channel).LogSettings(
            pb.LogSettingsRequest(settings={"log_verbose_level": setting})
        )
    assert {logging_settings(port)["log_verbose_level"] for _ in range(CONNECTIONS)} == {0}


def test_a_trace_setting_change_through_one_worker_reaches_every_worker(workers):
    port = workers.http_port

    def rates() -> set[str]:
        answers = [request(port, "GET", "/v2/trace/setting") for _ in range(CONNECTIONS)]
        assert all(status == 200 for status, _ in answers), answers
        return {json.loads(body)["trace_rate"] for _, body in answers}

    before = rates()
    assert len(before) == 1 and before != {"7"}
    status, body = request(port, "POST", "/v2/trace/setting", b'{"trace_rate": "7"}')
    assert status == 200, body
    assert rates() == {"7"}
    with grpc.insecure_channel(workers.grpc_url) as channel:
        value = pb.TraceSettingRequest.SettingValue(value=["9"])
        pb_grpc.GRPCInferenceServiceStub(channel).TraceSetting(
            pb.TraceSettingRequest(settings={"trace_rate": value})
        )
    assert rates() == {"9"}
