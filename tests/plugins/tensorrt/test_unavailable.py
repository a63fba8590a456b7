"""Without a GPU or tensorrt: the plugin imports, says why, and only its models fail."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.request
from importlib import metadata
from pathlib import Path

import pytest

from modelplatform import Settings
from modelplatform.testing import InProcessServer, ServerProcess, free_port
from modelplatform_tensorrt.backend import TensorRTBackend

ROOT = Path(__file__).resolve().parents[3]
REASON = TensorRTBackend.unavailable_reason()
INSTALLED = {ep.name for ep in metadata.entry_points(group="modelplatform")}
# Only the plugins this test is about (others' work in progress cannot break it).
PLUGINS = tuple(p for p in ("oip-rest", "python", "tensorrt", "repository") if p in INSTALLED)
FAKE_CONFIG = """
name: "fake_trt"
platform: "tensorrt_plan"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
"""


@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("trt_repo")
    shutil.copytree(ROOT / "model_repository" / "simple", root / "simple")
    (root / "fake_trt" / "1").mkdir(parents=True)
    (root / "fake_trt" / "config.pbtxt").write_text(FAKE_CONFIG)
    (root / "fake_trt" / "1" / "model.plan").write_bytes(b"\x00 not a serialized engine")
    return root


def _expected_reason() -> str:
    return REASON if REASON else "could not deserialise"


@pytest.mark.skipif(REASON is None, reason="tensorrt, pycuda and a GPU are all present here")
def test_platform_plugins_reports_tensorrt_unavailable():
    result = subprocess.run(
        [sys.executable, "-m", "modelplatform", "plugins"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    line = next(line for line in result.stdout.splitlines() if line.startswith("tensorrt "))
    assert "unavailable" in line
    assert REASON in line


async def test_index_carries_the_reason_and_other_models_serve(repository):
    settings = Settings(
        model_repository=repository,
        plugins=PLUGINS,
        host="127.0.0.1",
        http_port=free_port(),
        grpc_port=free_port(),
    )
    async with InProcessServer(settings) as server:
        entries = {e.name: e for e in server.running.models.index()}
        assert entries["fake_trt"].state == "UNAVAILABLE"
        assert _expected_reason() in entries["fake_trt"].reason
        assert entries["simple"].state == "READY"


def test_served_repository_answers_for_others_and_explains_the_plan(repository):
    with ServerProcess(
        "--model-repository", str(repository), "--no-strict-readiness", "--plugins", ",".join(PLUGINS)
    ) as server:
        body = {
            "inputs": [
                {"name": n, "shape": [1, 16], "datatype": "INT32", "data": list(range(16))}
                for n in ("INPUT0", "INPUT1")
            ]
        }
        answer = _post(f"http://{server.http_url}/v2/models/simple/infer", body)
        assert answer["outputs"][0]["data"] == [2 * i for i in range(16)]
        with pytest.raises(urllib.error.HTTPError) as caught:
            _post(f"http://{server.http_url}/v2/models/fake_trt/infer", body)
        assert caught.value.code in (400, 404, 503)
        assert _expected_reason() in json.loads(caught.value.read())["error"]
        if "repository" in PLUGINS:
            index = {e["name"]: e for e in _post(f"http://{server.http_url}/v2/repository/index", {})}
            assert _expected_reason() in index["fake_trt"]["reason"]


def _post(url: str, body: dict) -> object:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())
