"""The example in docs/plugins/writing-a-backend.md is a working third-party backend.

Its files are cut out of the page, built and pip-installed into a private
folder that only the server subprocess sees (``--target`` + PYTHONPATH), so
the shared virtual environment is never changed, even if the test dies;
the server finds the backend through entry-point discovery alone.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from modelplatform.testing import ServerProcess

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "plugins" / "writing-a-backend.md"
FILE_BLOCK = re.compile(r"^#### `([^`]+)`\n+```\w*\n(.*?)^```", re.MULTILINE | re.DOTALL)
MODEL = """
name: "doubler"
backend: "scale"
input [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]
parameters { key: "factor" value: { string_value: "2.5" } }
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The example distribution built from the page and installed into a private folder."""
    work = tmp_path_factory.mktemp("third_party")
    files = dict(FILE_BLOCK.findall(PAGE.read_text()))
    assert set(files) >= {"pyproject.toml", "modelplatform_scale/backend.py", "modelplatform_scale/plugin.py"}
    for name, text in files.items():
        (work / "dist" / name).parent.mkdir(parents=True, exist_ok=True)
        (work / "dist" / name).write_text(text)
    command = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
               "--target", str(work / "site"), str(work / "dist")]  # fmt: skip
    subprocess.run(command, check=True, timeout=180, capture_output=True)
    return work / "site"


@pytest.fixture(scope="module")
def environment(site) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH", "")]))}


def test_platform_plugins_discovers_it(environment):
    result = subprocess.run(
        [sys.executable, "-m", "modelplatform", "plugins"],
        env={**os.environ, **environment}, capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    line = next(line for line in result.stdout.splitlines() if line.startswith("scale "))
    assert "modelplatform-scale" in line and "loaded" in line


@pytest.mark.hook("register_backends")
def test_serves_a_model_through_entry_point_discovery(environment, tmp_path):
    (tmp_path / "doubler" / "1").mkdir(parents=True)
    (tmp_path / "doubler" / "config.pbtxt").write_text(MODEL)
    with ServerProcess("--model-repository", str(tmp_path), env=environment) as server:
        body = {"inputs": [{"name": "X", "shape": [3], "datatype": "FP32", "data": [1.0, 2.0, -4.0]}]}
        answer = _post(f"http://{server.http_url}/v2/models/doubler/infer", body)
        assert answer["outputs"][0]["name"] == "Y"
        assert answer["outputs"][0]["data"] == [2.5, 5.0, -10.0]
        bad = {"inputs": [{"name": "X", "shape": [1], "datatype": "FP32", "data": [1e39]}]}  # inf in FP32
        with pytest.raises(urllib.error.HTTPError) as caught:
            _post(f"http://{server.http_url}/v2/models/doubler/infer", bad)
        assert caught.value.code == 400
        assert "non-finite" in json.loads(caught.value.read())["error"]


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())
