"""Ensembles under ``platform serve --workers 2`` (issue 18's follow-up).

Every check opens fresh connections, which SO_REUSEPORT spreads over both
workers (test_workers.py). ``tagged`` is an ensemble whose last step answers
its worker's pid, so the answers show that every worker ran it; the
repository API's load and unload of ``simple_ensemble`` (explicit mode) must
reach every worker before they answer.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest

from modelplatform.testing import ServerProcess
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc

from ..conftest import MODEL_REPOSITORY
from ..plugins.ensemble.models import (
    ensemble_json,
    ensemble_model,
    fp32,
    python_model,
    scale_model,
    step,
)
from .test_workers import CONNECTIONS, request, statuses, wait_ready

#: OUTPUT0 = INPUT0 and the pid of the worker that ran it.
WHOAMI_PY = """
import os

import numpy as np


class Model:
    def infer(self, inputs):
        return {"OUTPUT0": inputs["INPUT0"], "PID": np.array([os.getpid()], dtype=np.int64)}
"""
WHOAMI_CONFIG = (
    "max_batch_size: 0\n"
    'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
    'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] },'
    ' { name: "PID" data_type: TYPE_INT64 dims: [ 1 ] } ]\n'
)
#: IN -> tenfold -> whoami: OUT = 10 * IN, and the pid of the worker that ran the last step.
TAGGED = {
    "platform": "ensemble",
    "max_batch_size": 0,
    "input": [fp32("IN")],
    "output": [fp32("OUT"), {"name": "PID", "data_type": "TYPE_INT64", "dims": [1]}],
    "ensemble_scheduling": {
        "step": [
            step("tenfold", {"INPUT0": "IN"}, {"OUTPUT0": "MID"}),
            step("whoami", {"INPUT0": "MID"}, {"OUTPUT0": "OUT", "PID": "PID"}),
        ]
    },
}
#: OUTPUT0 = 2 * INPUT0 after 1.5 s; marks its start with a file (both workers share the folder).
SLOW_DOUBLE_PY = """
import time
from pathlib import Path


class Model:
    def load(self, config, version_dir):
        self.folder = Path(version_dir)

    def infer(self, inputs):
        (self.folder / f"started-{float(inputs['INPUT0'].reshape(-1)[0])}").touch()
        time.sleep(1.5)
        return {"OUTPUT0": inputs["INPUT0"] * 2}
"""
SLOW_DOUBLE_CONFIG = (
    "max_batch_size: 0\n"
    'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
    'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
    "instance_group [ { count: 8 kind: KIND_CPU } ]\n"
)
ROW = np.arange(16, dtype=np.int32).reshape(1, 16)
ONES = np.ones((1, 16), dtype=np.int32)


def make_repository(root: Path) -> Path:
    for name in ("simple", "simple_ensemble"):
        shutil.copytree(MODEL_REPOSITORY / name, root / name)
    scale_model(root, "tenfold", 10.0)
    python_model(root, "whoami", WHOAMI_PY, WHOAMI_CONFIG)
    ensemble_model(root, "tagged", TAGGED)
    python_model(root, "double_slow", SLOW_DOUBLE_PY, SLOW_DOUBLE_CONFIG)
    scale_model(root, "fivefold", 5.0)
    ensemble_model(
        root,
        "slow_chain",
        ensemble_json(
            ["IN"],
            ["OUT"],
            [
                step("double_slow", {"INPUT0": "IN"}, {"OUTPUT0": "MID"}),
                step("fivefold", {"INPUT0": "MID"}, {"OUTPUT0": "OUT"}),
            ],
        ),
    )
    ensemble_model(
        root,
        "overridden",
        ensemble_json(["IN"], ["OUT"], [step("tenfold", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"})]),
    )
    return root


@pytest.fixture(scope="module")
def workers(tmp_path_factory) -> Iterator[ServerProcess]:
    repository = make_repository(tmp_path_factory.mktemp("ensembles"))
    args = (
        "--model-repository",
        str(repository),
        "--workers",
        "2",
        "--model-control-mode",
        "explicit",
        "--load-model",
        "tagged",
        "--load-model",
        "slow_chain",
    )
    with ServerProcess(*args) as server:
        wait_ready(server)
        server.repository = repository
        yield server


def tagged_body(values: list[float]) -> bytes:
    return json.dumps(
        {"inputs": [{"name": "IN", "datatype": "FP32", "shape": [len(values)], "data": values}]}
    ).encode()


def simple_body() -> bytes:
    tensors = [
        {"name": name, "datatype": "INT32", "shape": [1, 16], "data": data}
        for name, data in (("INPUT0", ROW.ravel().tolist()), ("INPUT1", ONES.ravel().tolist()))
    ]
    return json.dumps({"inputs": tensors}).encode()


def outputs(body: bytes) -> dict[str, list]:
    return {o["name"]: o["data"] for o in json.loads(body)["outputs"]}


def grpc_infer(url: str, request_message: pb.ModelInferRequest) -> pb.ModelInferResponse:
    """One ModelInfer on its own new channel (so on either worker)."""
    with grpc.insecure_channel(url) as channel:
        return pb_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request_message, timeout=30)


def tagged_request(values: list[float]) -> pb.ModelInferRequest:
    message = pb.ModelInferRequest(model_name="tagged")
    message.inputs.add(name="IN", datatype="FP32", shape=[len(values)])
    message.raw_input_contents.append(np.array(values, np.float32).tobytes())
    return message


def simple_request() -> pb.ModelInferRequest:
    message = pb.ModelInferRequest(model_name="simple_ensemble")
    for name, array in (("INPUT0", ROW), ("INPUT1", ONES)):
        message.inputs.add(name=name, datatype="INT32", shape=[1, 16])
        message.raw_input_contents.append(array.tobytes())
    return message


def raw_outputs(reply: pb.ModelInferResponse) -> dict[str, np.ndarray]:
    kinds = {"FP32": "<f4", "INT32": "<i4", "INT64": "<i8"}
    return {
        o.name: np.frombuffer(raw, kinds[o.datatype])
        for o, raw in zip(reply.outputs, reply.raw_output_contents, strict=True)
    }


def test_every_worker_runs_the_ensemble_over_http(workers):
    pids = set()
    for index in range(CONNECTIONS):
        status, body = request(
            workers.http_port, "POST", "/v2/models/tagged/infer", tagged_body([index, 0.5])
        )
        assert status == 200, body
        answer = outputs(body)
        assert answer["OUT"] == [10.0 * index, 5.0]
        pids.update(answer["PID"])
    assert len(pids) == 2  # both workers answered, each with both steps


def test_every_worker_runs_the_ensemble_over_grpc(workers):
    pids = set()
    for index in range(CONNECTIONS):
        answer = raw_outputs(grpc_infer(workers.grpc_url, tagged_request([index, -1.0])))
        assert answer["OUT"].tolist() == [10.0 * index, -10.0]
        pids.update(answer["PID"].tolist())
    assert len(pids) == 2


def http_serves_simple_ensemble(port: int) -> set[int]:
    """The status of one ensemble request on each of CONNECTIONS new connections (200: right answer)."""
    seen = set()
    for _ in range(CONNECTIONS):
        status, body = request(port, "POST", "/v2/models/simple_ensemble/infer", simple_body())
        if status == 200:
            answer = outputs(body)
            assert answer == {"OUTPUT0": (2 * ROW).ravel().tolist(), "OUTPUT1": (2 * ONES).ravel().tolist()}
        seen.add(status)
    return seen


def grpc_serves_simple_ensemble(url: str) -> set[grpc.StatusCode]:
    seen = set()
    for _ in range(CONNECTIONS):
        try:
            answer = raw_outputs(grpc_infer(url, simple_request()))
        except grpc.RpcError as error:
            seen.add(error.code())
            continue
        assert answer["OUTPUT0"].tolist() == (2 * ROW).ravel().tolist()
        assert answer["OUTPUT1"].tolist() == (2 * ONES).ravel().tolist()
        seen.add(grpc.StatusCode.OK)
    return seen


def repository_rpc(url: str, method: str, name: str, **parameters: bool) -> None:
    with grpc.insecure_channel(url) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        if method == "load":
            stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name=name), timeout=60)
        else:
            message = pb.RepositoryModelUnloadRequest(model_name=name)
            for key, value in parameters.items():
                message.parameters[key].bool_param = value
            stub.RepositoryModelUnload(message, timeout=60)


def test_an_ensemble_loaded_and_unloaded_over_http_reaches_every_worker(workers):
    port = workers.http_port
    assert statuses(port, "/v2/models/simple_ensemble/ready") == {400}
    status, body = request(port, "POST", "/v2/repository/models/simple_ensemble/load")
    assert status == 200, body
    assert statuses(port, "/v2/models/simple_ensemble/ready") == {200}
    assert statuses(port, "/v2/models/simple/ready") == {200}  # its step model came with it
    assert http_serves_simple_ensemble(port) == {200}
    assert grpc_serves_simple_ensemble(workers.grpc_url) == {grpc.StatusCode.OK}
    status, body = request(port, "POST", "/v2/repository/models/simple_ensemble/unload")
    assert status == 200, body
    assert statuses(port, "/v2/models/simple_ensemble/ready") == {400}
    assert http_serves_simple_ensemble(port) == {404}
    assert grpc_serves_simple_ensemble(workers.grpc_url) == {grpc.StatusCode.NOT_FOUND}


def test_an_ensemble_loaded_and_unloaded_over_grpc_reaches_every_worker(workers):
    repository_rpc(workers.grpc_url, "load", "simple_ensemble")
    assert statuses(workers.http_port, "/v2/models/simple_ensemble/ready") == {200}
    assert grpc_serves_simple_ensemble(workers.grpc_url) == {grpc.StatusCode.OK}
    repository_rpc(workers.grpc_url, "unload", "simple_ensemble")
    assert statuses(workers.http_port, "/v2/models/simple_ensemble/ready") == {400}
    assert grpc_serves_simple_ensemble(workers.grpc_url) == {grpc.StatusCode.NOT_FOUND}


def test_unloading_a_step_model_with_its_dependents_reaches_every_worker(workers):
    repository_rpc(workers.grpc_url, "load", "simple_ensemble")
    assert statuses(workers.http_port, "/v2/models/simple_ensemble/ready") == {200}
    repository_rpc(workers.grpc_url, "unload", "simple", unload_dependents=True)
    assert statuses(workers.http_port, "/v2/models/simple_ensemble/ready") == {400}
    assert statuses(workers.http_port, "/v2/models/simple/ready") == {400}
    assert http_serves_simple_ensemble(workers.http_port) == {404}
    # The other ensemble was not a dependent: every worker still runs it.
    test_every_worker_runs_the_ensemble_over_http(workers)


def test_an_ensemble_config_given_to_the_load_api_reaches_every_worker(workers):
    """The ``config`` parameter of the load request (Triton's JSON) is what every worker loads:
    on disk ``overridden`` has one step and no PID output; the given config adds ``whoami``."""
    config = {**TAGGED, "name": "overridden"}
    body = json.dumps({"parameters": {"config": json.dumps(config)}}).encode()
    status, answer = request(workers.http_port, "POST", "/v2/repository/models/overridden/load", body)
    assert status == 200, answer
    pids = set()
    for index in range(CONNECTIONS):
        status, answer = request(
            workers.http_port, "POST", "/v2/models/overridden/infer", tagged_body([index])
        )
        assert status == 200, answer
        assert outputs(answer)["OUT"] == [10.0 * index]
        pids.update(outputs(answer)["PID"])
    assert len(pids) == 2
    status, answer = request(workers.http_port, "POST", "/v2/repository/models/overridden/unload")
    assert status == 200, answer
    assert statuses(workers.http_port, "/v2/models/overridden/ready") == {400}


def test_the_ensembles_statistics_are_the_sums_over_every_worker(workers):
    def counts() -> set[tuple[int, int]]:
        seen = set()
        for _ in range(CONNECTIONS // 2):
            status, body = request(workers.http_port, "GET", "/v2/models/tagged/stats")
            assert status == 200, body
            (stats,) = json.loads(body)["model_stats"]
            seen.add((stats["inference_count"], stats["inference_stats"]["success"]["count"]))
        return seen

    (before,) = counts()
    for index in range(CONNECTIONS):
        assert request(workers.http_port, "POST", "/v2/models/tagged/infer", tagged_body([index]))[0] == 200
    assert counts() == {(before[0] + CONNECTIONS, before[1] + CONNECTIONS)}


def test_every_worker_runs_the_ensemble_on_a_stream(workers):
    pids = set()
    for index in range(CONNECTIONS):
        with grpc.insecure_channel(workers.grpc_url) as channel:
            stub = pb_grpc.GRPCInferenceServiceStub(channel)
            (reply,) = stub.ModelStreamInfer(iter([tagged_request([index])]), timeout=30)
        assert reply.error_message == ""
        answer = raw_outputs(reply.infer_response)
        assert answer["OUT"].tolist() == [10.0 * index]
        pids.update(answer["PID"].tolist())
    assert len(pids) == 2


def test_a_step_model_is_unloaded_only_after_every_workers_ensemble_requests(workers):
    """Requests in the first step of ``slow_chain`` on both workers when its second step is
    unloaded through one worker still run that step (the unload waits for them); then no
    worker serves it."""
    answers: list = []

    def one(index: int) -> None:
        answers.append(
            request(workers.http_port, "POST", "/v2/models/slow_chain/infer", tagged_body([index]))
        )

    senders = [threading.Thread(target=one, args=(index,)) for index in range(8)]
    for sender in senders:
        sender.start()
    started = workers.repository / "double_slow" / "1"
    deadline = time.monotonic() + 30
    while len(list(started.glob("started-*"))) < len(senders) and time.monotonic() < deadline:
        time.sleep(0.02)
    # Every request is in its first step (1.5 s); `fivefold` is the second.
    assert len(list(started.glob("started-*"))) == len(senders)
    status, body = request(workers.http_port, "POST", "/v2/repository/models/fivefold/unload")
    assert status == 200, body
    for sender in senders:
        sender.join()
    assert all(answer_status == 200 for answer_status, _ in answers), answers
    assert sorted(outputs(answer)["OUT"][0] for _, answer in answers) == [
        10.0 * index for index in range(len(senders))
    ]
    assert statuses(workers.http_port, "/v2/models/fivefold/ready") == {400}
    status, body = request(workers.http_port, "POST", "/v2/repository/models/fivefold/load")
    assert status == 200, body
