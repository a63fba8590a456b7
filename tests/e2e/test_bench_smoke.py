"""Benchmark smoke test: batching and instances stay correct under concurrency.

A few seconds, no timing assertions: concurrent clients each get their own
answer, the batcher really joins requests, and two instances really share
the load (their execution counts in the statistics). The REST dialect rows'
bodies (benchmarks/rest_dialects.py, measured with wrk by `make bench`) are
each sent once and must be answered with the expected outputs.
"""

from __future__ import annotations

import dataclasses
import http.client
import importlib.util
import json
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

import pytest

from modelplatform.testing import ServerProcess

from ..conftest import MODEL_REPOSITORY, ROOT

CLIENTS = 16
REQUESTS = 96


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repository = tmp_path_factory.mktemp("smoke")
    for name in ("sleep_2ms", "sleep_2ms_batched", "simple", "saved_model_half_plus_three"):
        shutil.copytree(MODEL_REPOSITORY / name, repository / name)
    _twin(repository, "sleep_2ms", "sleep_2ms_x2", "instance_group [ { count: 2 kind: KIND_CPU } ]\n")
    with ServerProcess("--model-repository", str(repository)) as process:
        yield process


def _twin(repository: Path, source: str, name: str, extra: str) -> None:
    shutil.copytree(repository / source, repository / name)
    config = repository / name / "config.pbtxt"
    config.write_text(config.read_text().replace(f'"{source}"', f'"{name}"') + extra)


def infer(port: int, model: str, value: float) -> dict:
    body = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 1], "data": [value]}]})
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", f"/v2/models/{model}/infer", body=body)
        reply = connection.getresponse()
        data = reply.read()
        assert reply.status == 200, data
    finally:
        connection.close()
    return {o["name"]: o["data"] for o in json.loads(data)["outputs"]}


def burst(port: int, model: str) -> list[dict]:
    with ThreadPoolExecutor(CLIENTS) as pool:
        return list(pool.map(lambda i: infer(port, model, float(i)), range(REQUESTS)))


def stats(port: int, model: str) -> dict:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", f"/v2/models/{model}/stats")
        return json.loads(connection.getresponse().read())["model_stats"][0]
    finally:
        connection.close()


def test_batched_model_answers_each_request_and_joins_them(server):
    answers = burst(server.http_port, "sleep_2ms_batched")
    assert [a["OUTPUT0"] for a in answers] == [[float(i)] for i in range(REQUESTS)]
    assert max(a["BATCH_ROWS"][0] for a in answers) > 1  # some calls held several requests
    entry = stats(server.http_port, "sleep_2ms_batched")
    assert entry["inference_count"] == REQUESTS
    assert entry["execution_count"] < REQUESTS


def test_two_instances_share_the_load(server):
    answers = burst(server.http_port, "sleep_2ms_x2")
    assert [a["OUTPUT0"] for a in answers] == [[float(i)] for i in range(REQUESTS)]
    assert all(a["BATCH_ROWS"] == [1] for a in answers)  # no batcher: one request per call
    instances = {
        i["instance"]: i["execution_count"] for i in stats(server.http_port, "sleep_2ms_x2")["instance_stats"]
    }
    assert set(instances) == {0, 1} and sum(instances.values()) == REQUESTS


def _bench_module(name: str) -> ModuleType:
    """A module of benchmarks/ (a folder of scripts, not a package), imported by path."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


rest_dialects = _bench_module("rest_dialects")


@pytest.mark.parametrize("bench_request", rest_dialects.REQUESTS, ids=lambda r: r.label)
def test_rest_dialect_bench_body_is_answered_with_the_expected_outputs(server, bench_request) -> None:
    rest_dialects.check(bench_request, "127.0.0.1", server.http_port)


@pytest.mark.parametrize("bench_request", rest_dialects.HALF_PLUS_THREE, ids=lambda r: r.label)
def test_half_plus_three_bench_body_is_answered_with_the_expected_outputs(server, bench_request) -> None:
    rest_dialects.check(bench_request, "127.0.0.1", server.http_port)


def test_bench_body_check_fails_on_a_refused_body_and_on_wrong_outputs(server) -> None:
    unknown_model = dataclasses.replace(
        rest_dialects.GRPS, body=rest_dialects.GRPS.body.replace(b"simple", b"nope")
    )
    with pytest.raises(rest_dialects.BodyRejected, match="answered 404"):
        rest_dialects.check(unknown_model, "127.0.0.1", server.http_port)
    swapped = rest_dialects.TFSERVING.body.replace(b"INPUT0", b"SWAP").replace(b"INPUT1", b"INPUT0")
    swapped_inputs = dataclasses.replace(rest_dialects.TFSERVING, body=swapped.replace(b"SWAP", b"INPUT1"))
    with pytest.raises(rest_dialects.BodyRejected, match="expected"):
        rest_dialects.check(swapped_inputs, "127.0.0.1", server.http_port)
