"""The plugin as operators meet it: `platform plugins` lists it, a bad prefix is refused at once."""

from __future__ import annotations

import subprocess
import sys

from ...conftest import MODEL_REPOSITORY


def _platform(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "modelplatform", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_platform_plugins_lists_it_loaded():
    listed = _platform("plugins")
    assert listed.returncode == 0, listed.stderr
    row = next(line.split() for line in listed.stdout.splitlines() if line.startswith("openai "))
    assert row[:2] == ["openai", "modelplatform-openai"] and row[-1] == "loaded"


def test_a_prefix_that_is_no_static_path_is_refused_before_anything_starts():
    refused = _platform("serve", "--model-repository", str(MODEL_REPOSITORY), "--openai-prefix", "v1/{x}")
    assert refused.returncode != 0
    assert "must be a static absolute path without a trailing slash" in refused.stdout + refused.stderr
