"""Triton ensembles (issue 18 point 1) against a real server with real clients.

``simple_ensemble`` (bundled) runs ``simple`` twice: OUTPUT0 = 2 * INPUT0,
OUTPUT1 = 2 * INPUT1. The test repository adds a fan-out ensemble of two
slow steps (they must overlap), a slow chain (for unloads while a request is
between steps) and ``bad_ensemble``, whose configuration each load-error
case replaces through the repository API.
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest
import tritonclient.http as httpclient

from modelplatform.testing import ServerProcess

from ..plugins.ensemble.models import ensemble_json, make_repository, step
from ..plugins.repository.helpers import grpc_client, index, post

ROW = np.arange(16, dtype=np.int32).reshape(1, 16)
ONES = np.ones((1, 16), dtype=np.int32)


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    return make_repository(tmp_path_factory.mktemp("ensembles"))


@pytest.fixture(scope="module")
def server(repository):
    with ServerProcess(
        "--model-repository", str(repository), "--model-control-mode", "explicit", "--load-model", "*"
    ) as process:
        yield process


@pytest.fixture
def client(server):
    with httpclient.InferenceServerClient(server.http_url) as connection:
        yield connection


def _pair(client_module, a: np.ndarray, b: np.ndarray) -> list:
    inputs = [
        client_module.InferInput("INPUT0", list(a.shape), "INT32"),
        client_module.InferInput("INPUT1", list(b.shape), "INT32"),
    ]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    return inputs


def _fp32(values: list[float]) -> list:
    tensor = httpclient.InferInput("IN", [len(values)], "FP32")
    tensor.set_data_from_numpy(np.array(values, dtype=np.float32))
    return [tensor]


def test_tritonclient_http_runs_both_steps(client):
    result = client.infer("simple_ensemble", _pair(httpclient, ROW, ONES))
    assert (result.as_numpy("OUTPUT0") == 2 * ROW).all()
    assert (result.as_numpy("OUTPUT1") == 2 * ONES).all()
    assert client.get_model_metadata("simple_ensemble")["platform"] == "ensemble"


def test_tritonclient_http_binary_outputs_and_one_requested_output(client):
    wanted = [httpclient.InferRequestedOutput("OUTPUT1", binary_data=True)]
    result = client.infer("simple_ensemble", _pair(httpclient, ROW, ROW), outputs=wanted)
    assert (result.as_numpy("OUTPUT1") == 2 * ROW).all()
    assert result.as_numpy("OUTPUT0") is None


def test_tritonclient_grpc_runs_the_ensemble(server):
    result = grpc_client(
        server.grpc_url,
        """
        import numpy as np
        a = np.arange(16, dtype=np.int32).reshape(1, 16)
        inputs = [grpcclient.InferInput("INPUT0", [1, 16], "INT32"), grpcclient.InferInput("INPUT1", [1, 16], "INT32")]
        inputs[0].set_data_from_numpy(a)
        inputs[1].set_data_from_numpy(a * 3)
        answer = client.infer("simple_ensemble", inputs)
        config = client.get_model_config("simple_ensemble", as_json=True)["config"]
        result = [answer.as_numpy("OUTPUT0").tolist(), answer.as_numpy("OUTPUT1").tolist(),
                  config["platform"], [s["model_name"] for s in config["ensemble_scheduling"]["step"]]]
    """,
    )
    row = list(range(16))
    assert result[0] == [[2 * x for x in row]]
    assert result[1] == [[6 * x for x in row]]
    assert result[2] == "ensemble" and result[3] == ["simple", "simple"]


def test_tfserving_rest_predict_targets_the_ensemble(server):
    body = {"instances": [{"INPUT0": list(range(16)), "INPUT1": [1] * 16}]}
    status, answer = post(server.http_url, "/v1/models/simple_ensemble:predict", json.dumps(body).encode())
    assert status == 200, answer
    assert answer["predictions"][0]["OUTPUT0"] == [2 * i for i in range(16)]
    assert answer["predictions"][0]["OUTPUT1"] == [2] * 16


def test_grps_predict_targets_the_ensemble(server):
    def tensor(name: str, values: list[int]) -> dict:
        return {"name": name, "dtype": "DT_INT32", "shape": [1, 16], "flat_int32": values}

    body = {
        "model": "simple_ensemble",
        "gtensors": {"tensors": [tensor("INPUT0", list(range(16))), tensor("INPUT1", [5] * 16)]},
    }
    status, answer = post(
        server.http_url,
        "/grps/v1/infer/predict",
        json.dumps(body).encode(),
        {"Content-Type": "application/json"},
    )
    assert status == 200, answer
    outputs = {t["name"]: t["flat_int32"] for t in answer["gtensors"]["tensors"]}
    assert outputs["OUTPUT0"] == [2 * i for i in range(16)]
    assert outputs["OUTPUT1"] == [10] * 16


def test_independent_steps_run_in_parallel(client):
    client.infer("fan_out", _fp32([1.0]))  # the first calls of a python model run on its thread anyway
    started = time.perf_counter()
    result = client.infer("fan_out", _fp32([1.0, 2.0]))
    elapsed = time.perf_counter() - started
    assert result.as_numpy("TWICE").tolist() == [2.0, 4.0]
    assert result.as_numpy("THRICE").tolist() == [3.0, 6.0]
    assert elapsed < 1.1, f"two 0.6 s steps took {elapsed:.2f} s: they did not overlap"


def test_each_step_is_counted_in_its_own_models_statistics(client):
    before = client.get_inference_statistics("simple")["model_stats"][0]["inference_count"]
    ensemble_before = client.get_inference_statistics("simple_ensemble")["model_stats"][0]
    for _ in range(3):
        client.infer("simple_ensemble", _pair(httpclient, ROW, ONES))
    after = client.get_inference_statistics("simple")["model_stats"][0]["inference_count"]
    ensemble_after = client.get_inference_statistics("simple_ensemble")["model_stats"][0]
    assert after - before == 6  # two steps per request
    assert ensemble_after["inference_count"] - ensemble_before["inference_count"] == 3
    assert int(ensemble_after["inference_stats"]["success"]["count"]) >= 3


def test_a_bad_input_is_a_400_naming_the_tensor(client):
    wrong = httpclient.InferInput("INPUT0", [1, 3], "INT32")
    wrong.set_data_from_numpy(np.zeros((1, 3), dtype=np.int32))
    other = httpclient.InferInput("INPUT1", [1, 16], "INT32")
    other.set_data_from_numpy(ONES)
    with pytest.raises(Exception) as raised:
        client.infer("simple_ensemble", [wrong, other])
    assert "400" in str(raised.value.status()) and "INPUT0" in str(raised.value)


BAD = {
    "unmapped ensemble input": (
        ensemble_json(["IN", "EXTRA"], ["OUT"], [step("tenfold", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"})]),
        ["ensemble input 'EXTRA'", "not mapped"],
    ),
    "unmapped step input": (
        ensemble_json(["IN"], ["OUT"], [step("simple", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"})]),
        ["step 0 ('simple')", "model input 'INPUT1' is not mapped"],
    ),
    "unknown tensor": (
        ensemble_json(["IN"], ["OUT"], [step("tenfold", {"INPUT0": "NOWHERE"}, {"OUTPUT0": "OUT"})]),
        ["step 0 ('tenfold')", "'NOWHERE'", "neither an ensemble input"],
    ),
    "tensor produced twice": (
        ensemble_json(
            ["IN"],
            ["OUT"],
            [
                step("tenfold", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"}),
                step("double_slow", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"}),
            ],
        ),
        ["tensor 'OUT' is produced twice", "step 0 ('tenfold')", "step 1 ('double_slow')"],
    ),
    "unknown step model": (
        ensemble_json(["IN"], ["OUT"], [step("no_such_model", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"})]),
        ["step 0 ('no_such_model')", "model 'no_such_model' is not available"],
    ),
    "cycle": (
        ensemble_json(
            ["IN"],
            ["OUT"],
            [
                step("simple", {"INPUT0": "IN", "INPUT1": "B"}, {"OUTPUT0": "A", "OUTPUT1": "OUT"}),
                step("tenfold", {"INPUT0": "A"}, {"OUTPUT0": "B"}),
            ],
        ),
        ["cycle", "step 0 ('simple')", "step 1 ('tenfold')"],
    ),
    "unknown output of the step model": (
        ensemble_json(["IN"], ["OUT"], [step("tenfold", {"INPUT0": "IN"}, {"NOPE": "OUT"})]),
        ["step 0 ('tenfold')", "output_map names 'NOPE'"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_wiring_fails_the_load_naming_step_and_tensor(server, case):
    config, words = BAD[case]
    body = json.dumps({"parameters": {"config": json.dumps(config)}}).encode()
    status, answer = post(server.http_url, "/v2/repository/models/bad_ensemble/load", body)
    assert status == 400, answer
    for word in words:
        assert word in answer["error"], (word, answer["error"])
    assert index(server.http_url)["bad_ensemble"]["state"] == "READY"  # the good one kept serving


def test_a_model_is_not_unloaded_while_an_ensemble_using_it_has_a_request_in_flight(
    server, client, repository
):
    answers: list = []
    succeeded_before = _successes(client, "slow_chain")
    started = repository / "double_slower" / "1" / "started"  # its first step touches it
    started.unlink(missing_ok=True)
    request = threading.Thread(
        target=lambda: answers.append(
            post(
                server.http_url,
                "/v2/models/slow_chain/infer",
                json.dumps(
                    {"inputs": [{"name": "IN", "shape": [1], "datatype": "FP32", "data": [1.5]}]}
                ).encode(),
            )
        )
    )
    request.start()
    deadline = time.monotonic() + 30
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert started.exists(), "the ensemble's request never reached its first step"
    # The request is in its first step (1.5 s); `tenfold` is its second.
    client.unload_model("tenfold")  # returns once the ensemble's request has finished
    # Asked of the server: the request thread may read its answer a moment after the unload's.
    assert _successes(client, "slow_chain") == succeeded_before + 1, (
        "the unload returned before the ensemble's request had finished"
    )
    request.join(timeout=30)
    status, body = answers[0]
    assert status == 200, body
    assert body["outputs"][0]["data"] == [30.0]
    assert index(server.http_url)["tenfold"]["state"] == "UNAVAILABLE"
    client.load_model("tenfold")


def _successes(client, model: str) -> int:
    (stats,) = client.get_inference_statistics(model)["model_stats"]
    return int(stats["inference_stats"]["success"]["count"])


def test_unload_dependents_unloads_the_ensembles_that_use_the_model(server, client):
    client.unload_model("identity_fp32", unload_dependents=True)  # no ensemble uses it: only itself
    assert index(server.http_url)["simple_ensemble"]["state"] == "READY"
    client.unload_model("simple", unload_dependents=True)
    states = index(server.http_url)
    assert states["simple"]["state"] == "UNAVAILABLE"
    assert states["simple_ensemble"]["state"] == "UNAVAILABLE"
    assert states["bls_simple"]["state"] == "READY"  # BLS callers are not declared dependents
    client.load_model("simple_ensemble")  # loads `simple` with it, as Triton loads composing models
    states = index(server.http_url)
    assert states["simple"]["state"] == "READY" and states["simple_ensemble"]["state"] == "READY"
    client.load_model("identity_fp32")


def test_unload_dependents_over_grpc(server, client):
    grpc_client(
        server.grpc_url,
        """
        client.unload_model("simple", unload_dependents=True)
        result = True
    """,
    )
    states = index(server.http_url)
    assert states["simple"]["state"] == "UNAVAILABLE" and states["simple_ensemble"]["state"] == "UNAVAILABLE"
    client.load_model("simple_ensemble")
    assert index(server.http_url)["simple"]["state"] == "READY"


def test_unload_without_dependents_keeps_the_ensemble(server, client):
    client.unload_model("simple")
    assert index(server.http_url)["simple_ensemble"]["state"] == "READY"
    with pytest.raises(Exception) as raised:
        client.infer("simple_ensemble", _pair(httpclient, ROW, ONES))
    assert "simple" in str(raised.value)
    client.load_model("simple")
    assert (client.infer("simple_ensemble", _pair(httpclient, ROW, ONES)).as_numpy("OUTPUT1") == 2).all()
