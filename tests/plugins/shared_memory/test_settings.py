"""The shared-memory settings: off by default, bounded, settable from env and flags."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from modelplatform import InvalidArgument
from modelplatform.composition.options import resolve


def _options(settings):
    return settings.options_for("shared-memory")


def test_client_shared_memory_is_off_and_bounded_by_default():
    settings = resolve(env={})
    assert _options(settings)["allow_client_shm"] is False and _options(settings)["max_shm_regions"] == 64


def test_env_turns_it_on_and_a_bound_below_one_is_refused():
    assert _options(resolve(env={"MODELPLATFORM_ALLOW_CLIENT_SHM": "true"}))["allow_client_shm"] is True
    with pytest.raises(InvalidArgument, match="max_shm_regions must be positive"):
        resolve(env={}, overrides={"max_shm_regions": 0})


def test_the_flags_are_in_their_panels():
    # Issue 27: a plugin's options are in the plugin's own panel (serve loads the plugins first).
    text = subprocess.run([sys.executable, "-m", "modelplatform", "serve", "--help"], capture_output=True,
                          text=True, env={**os.environ, "COLUMNS": "200"}).stdout  # fmt: skip
    panel = text[text.index("shared-memory plugin") :].split("╰")[0]
    assert "--allow-client-shm" in panel and "--max-shm-regions" in panel
