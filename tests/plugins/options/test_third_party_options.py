"""A third party's plugin declares an option: it is a flag, a variable and a config key.

The distribution below is built from its files and pip-installed into a
private folder that only the subprocesses see (``--target`` + PYTHONPATH), so
the shared virtual environment is never changed; the server finds it through
entry-point discovery alone. Its backend multiplies its input by the option's
value, so each answer shows which source the server took the value from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from modelplatform.testing import ServerProcess

FILES = {
    "pyproject.toml": """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "modelplatform-gain"
version = "0.0.1"

[project.entry-points.modelplatform]
gain = "modelplatform_gain.plugin"

[tool.setuptools.packages.find]
include = ["modelplatform_gain*"]
""",
    "modelplatform_gain/__init__.py": "",
    "modelplatform_gain/plugin.py": """
from collections.abc import Sequence

from modelplatform import Backend, InferenceResponse, InvalidArgument, Option, Settings, Tensor, hookimpl

def _positive(factor: float) -> None:
    if factor <= 0:
        raise InvalidArgument("gain factor must be above 0")

OPTIONS = (Option("factor", float, 1.0, "What the gain backend multiplies by.", _positive),)

class Gain(Backend):
    kind = "gain"
    factor = 1.0

    async def load(self) -> None:
        pass

    async def execute(self, batch):
        return [InferenceResponse(r.model_name, "", [Tensor.from_array("Y", r.arrays()["X"] * self.factor)])
                for r in batch]

@hookimpl
def register_options() -> Sequence[Option]:
    return OPTIONS

@hookimpl
def register_backends(settings: Settings):
    return [type("Gain", (Gain,), {"factor": settings.options_for("gain")["factor"]})]
""",
}
MODEL = """
name: "amplifier"
backend: "gain"
input [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]
"""


@pytest.fixture(scope="module")
def environment(tmp_path_factory) -> dict[str, str]:
    """PYTHONPATH with the plugin's distribution, installed into a private folder."""
    work = tmp_path_factory.mktemp("third_party_options")
    for name, text in FILES.items():
        (work / "dist" / name).parent.mkdir(parents=True, exist_ok=True)
        (work / "dist" / name).write_text(text)
    command = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
               "--target", str(work / "site"), str(work / "dist")]  # fmt: skip
    subprocess.run(command, check=True, timeout=180, capture_output=True)
    paths = [str(work / "site"), os.environ.get("PYTHONPATH", "")]
    return {"PYTHONPATH": os.pathsep.join(filter(None, paths))}


@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gain_models")
    (root / "amplifier" / "1").mkdir(parents=True)
    (root / "amplifier" / "config.pbtxt").write_text(MODEL)
    return root


def _platform(environment: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **environment, "COLUMNS": "120"}
    return subprocess.run([sys.executable, "-m", "modelplatform", *args], env=env, capture_output=True,
                          text=True, timeout=60)  # fmt: skip


def _amplified(server: ServerProcess) -> list[float]:
    body = {"inputs": [{"name": "X", "shape": [2], "datatype": "FP32", "data": [1.0, -2.0]}]}
    url = f"http://{server.http_url}/v2/models/amplifier/infer"
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["outputs"][0]["data"]


@pytest.mark.hook("register_options")
@pytest.mark.parametrize(
    ("variable", "flag", "expected"),
    [
        (None, None, [2.0, -4.0]),  # the config file's [plugins.gain] factor
        ("3", None, [3.0, -6.0]),  # MODELPLATFORM_GAIN_FACTOR beats the file
        ("3", "4", [4.0, -8.0]),  # --gain-factor beats both
    ],
)
def test_the_option_is_a_key_a_variable_and_a_flag(
    environment, repository, tmp_path, variable, flag, expected
):
    config = tmp_path / "settings.toml"
    config.write_text("[plugins.gain]\nfactor = 2.0\n")
    env = {**environment, **({"MODELPLATFORM_GAIN_FACTOR": variable} if variable else {})}
    args = ["--model-repository", str(repository), "--config", str(config)]
    with ServerProcess(*args, *(["--gain-factor", flag] if flag else []), env=env) as server:
        assert _amplified(server) == expected


def test_its_check_refuses_a_bad_value_at_start(environment):
    result = _platform(environment, "serve", "--gain-factor", "0")
    assert result.returncode == 2
    assert result.stderr.strip() == "error: gain factor must be above 0"


def test_its_flag_is_in_serve_help_under_its_own_panel(environment):
    result = _platform(environment, "serve", "--help")
    assert result.returncode == 0, result.stderr
    panel = result.stdout[result.stdout.index("─ gain plugin ─") :]
    assert "--gain-factor" in panel.split("╰")[0]
    assert "What the gain backend multiplies by." in panel.split("╰")[0]


def test_its_flag_is_refused_naming_the_plugin_when_it_is_disabled(environment):
    result = _platform(environment, "serve", "--disable-plugin", "gain", "--gain-factor", "3")
    assert result.returncode == 2
    expected = "--gain-factor is an option of plugin 'gain', which is disabled (--disable-plugin gain)"
    assert result.stderr.strip() == f"error: {expected}"
