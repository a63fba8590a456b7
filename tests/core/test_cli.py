import os
import subprocess
import sys

import pytest

from tests.conftest import MODEL_REPOSITORY, ROOT


def platform(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "modelplatform", *args], capture_output=True,
                          text=True, timeout=60, cwd=ROOT, env={**os.environ, "COLUMNS": "200", **(env or {})})


def test_version():
    result = platform("version")
    assert result.returncode == 0 and result.stdout.startswith("modelplatform 0.")


@pytest.mark.parametrize("command", ["serve", "plugins", "models", "version"])
def test_help_is_useful(command):
    result = platform(command, "--help")
    assert result.returncode == 0
    assert "Usage" in result.stdout


def test_serve_flags_mirror_tritonserver():
    text = platform("serve", "--help").stdout
    for flag in ("--model-repository", "--http-port", "--grpc-port", "--log-verbose",
                 "--model-control-mode", "--load-model", "--strict-readiness"):
        assert flag in text


def test_plugins_lists_distribution_version_and_status():
    lines = platform("plugins").stdout.splitlines()
    oip = next(line for line in lines if line.startswith("oip-rest"))
    assert "modelplatform-oip" in oip and "0.1.0" in oip and "loaded" in oip
    disabled = platform("plugins", env={"MODELPLATFORM_DISABLE_PLUGINS": "oip-rest"}).stdout
    assert "not enabled" in next(line for line in disabled.splitlines() if line.startswith("oip-rest"))


def test_models_lists_the_repository():
    out = platform("models", "--model-repository", str(MODEL_REPOSITORY)).stdout
    names = [line.split()[0] for line in out.splitlines()]
    for model in ("saved_model_half_plus_three", "simple", "simple_string",
                  "identity_fp32", "identity_fp16", "identity_bytes"):
        assert model in names
    assert "123" in next(line for line in out.splitlines() if line.startswith("saved_model"))


def test_bad_setting_exits_2_with_message():
    result = platform("serve", "--model-control-mode", "sometimes")
    assert result.returncode == 2 and "model_control_mode" in result.stderr
