"""Without torch (hidden from a fresh interpreter): the plugin imports and says why it cannot serve."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HIDE_TORCH = "import sys\nsys.modules['torch'] = None  # importlib then finds no torch, as if not installed\n"


@pytest.fixture
def no_torch_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "sitecustomize.py").write_text(HIDE_TORCH)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, env=env)


def test_platform_plugins_says_torch_is_missing(no_torch_env):
    listed = _run(no_torch_env, "-m", "modelplatform", "plugins")
    line = next(line for line in listed.stdout.splitlines() if line.startswith("pytorch "))
    assert "unavailable" in line
    assert "torch is not installed (pip install torch==2.13.0)" in line


def test_the_plugin_imports_without_torch_and_loads_it_only_in_load(no_torch_env):
    code = (
        "import sys\n"
        "import modelplatform_pytorch.plugin, modelplatform_pytorch.backend\n"
        "from modelplatform_pytorch.backend import PyTorchBackend\n"
        "print(PyTorchBackend.unavailable_reason())\n"
        "print(sorted(m for m in sys.modules if m.startswith('modelplatform_pytorch')))\n"
    )
    done = _run(no_torch_env, "-c", code)
    assert done.returncode == 0, done.stderr
    reason, modules = done.stdout.splitlines()[-2:]
    assert reason == "torch is not installed (pip install torch==2.13.0)"
    assert "modelplatform_pytorch.engine" not in modules and "modelplatform_pytorch.tensors" not in modules
