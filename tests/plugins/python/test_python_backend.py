"""The python backend served for real: contract, failures that stay local, JSON logs."""

from __future__ import annotations

import json
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from modelplatform.testing import ServerProcess

CONFIG = """
name: "{name}"
backend: "python"
input [ {{ name: "IN" data_type: TYPE_FP32 dims: [ -1 ] }} ]
output [ {{ name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] }} ]
"""

MODELS = {
    # sync infer; load() reads a file next to model.py; raises on a negative input
    "picky": """
        import numpy as np
        from pathlib import Path

        class Model:
            def load(self, config, version_dir):
                self.scale = float((Path(version_dir) / "scale.txt").read_text())
                self.name = config.name

            def infer(self, inputs):
                x = inputs["IN"]
                if (x < 0).any():
                    raise ValueError("negative input")
                return {"OUT": x * self.scale}
    """,
    # async infer returning float64: cast to the declared FP32
    "async_double": """
        class Model:
            async def infer(self, inputs):
                return {"OUT": inputs["IN"].astype("float64") * 2}
    """,
    # returns something that is not a dict
    "bad_return": """
        class Model:
            def infer(self, inputs):
                return [1, 2, 3]
    """,
    # fails to import: the model is UNAVAILABLE, the others serve
    "broken": """
        raise ImportError("this model cannot load")
    """,
}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root: Path = tmp_path_factory.mktemp("repo")
    for name, source in MODELS.items():
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(CONFIG.format(name=name))
        (root / name / "1" / "model.py").write_text(textwrap.dedent(source))
    (root / "picky" / "1" / "scale.txt").write_text("3")
    args = ("--model-repository", str(root), "--log-format", "json", "--no-strict-readiness")
    with ServerProcess(*args) as process:
        yield process


def infer(server, model: str, values: list[float]) -> tuple[int, dict]:
    doc = {"inputs": [{"name": "IN", "datatype": "FP32", "shape": [len(values)], "data": values}]}
    request = urllib.request.Request(
        f"http://{server.http_url}/v2/models/{model}/infer", data=json.dumps(doc).encode()
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_load_receives_config_and_version_dir(served):
    assert infer(served, "picky", [1.0, 2.0]) == (
        200,
        {
            "model_name": "picky",
            "model_version": "1",
            "outputs": [{"name": "OUT", "datatype": "FP32", "shape": [2], "data": [3.0, 6.0]}],
        },
    )


def test_user_exception_fails_only_that_request(served):
    status, body = infer(served, "picky", [-1.0])
    assert status == 500
    assert body["error"] == "model 'picky' failed: ValueError: negative input"
    assert infer(served, "picky", [1.0])[0] == 200
    assert infer(served, "async_double", [1.5])[1]["outputs"][0]["data"] == [3.0]


def test_async_infer_output_cast_to_declared_type(served):
    status, body = infer(served, "async_double", [2.0])
    assert status == 200
    assert body["outputs"][0]["datatype"] == "FP32"


def test_non_dict_return_is_a_clean_error(served):
    status, body = infer(served, "bad_return", [1.0])
    assert status == 400 and "must return a dict" in body["error"]


def test_broken_model_is_unavailable_and_others_serve(served):
    status, body = infer(served, "broken", [1.0])
    assert status == 404 and "this model cannot load" in body["error"]  # issue 13: failed = not there
    assert infer(served, "picky", [1.0])[0] == 200


def test_logs_are_json_events_without_tensor_contents(served):
    # neither a request nor a response value reaches the log: values no timestamp or duration can hold
    status, body = infer(served, "picky", [271828.5])
    assert status == 200 and body["outputs"][0]["data"] == [815485.5]
    assert infer(served, "picky", [-1.0])[0] == 500  # a failure is logged by its words only
    deadline = time.monotonic() + 10
    while "negative input" not in served.log() and time.monotonic() < deadline:
        time.sleep(0.05)  # the server's log file may trail its answer
    events = [json.loads(line) for line in served.log().splitlines() if line.startswith("{")]
    names = {e["event"] for e in events}
    assert {"model_loaded", "model_load_failed", "server_started"} <= names
    loaded = next(e for e in events if e["event"] == "model_loaded" and e["model"] == "picky")
    assert loaded["version"] == 1 and loaded["backend"] == "python"
    assert "271828" not in served.log() and "815485" not in served.log()
    failed = [e for e in events if e["event"] == "request_failed" and e["model"] == "picky"]
    assert failed and failed[0]["code"] == "INTERNAL" and "negative input" in failed[0]["error"]
