"""The shared-memory settings: off by default, bounded, settable from env and flags."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from modelplatform import InvalidArgument
from modelplatform.base.settings import resolve
from modelplatform.composition.cli import app


def test_client_shared_memory_is_off_and_bounded_by_default():
    settings = resolve(env={})
    assert settings.allow_client_shm is False and settings.max_shm_regions == 64


def test_env_turns_it_on_and_a_bound_below_one_is_refused():
    assert resolve(env={"MODELPLATFORM_ALLOW_CLIENT_SHM": "true"}).allow_client_shm is True
    with pytest.raises(InvalidArgument, match="max_shm_regions must be positive"):
        resolve(env={}, overrides={"max_shm_regions": 0})


def test_the_flags_are_in_their_panels():
    text = CliRunner().invoke(app, ["serve", "--help"], terminal_width=200).output
    security = text[text.index("Security") :]
    assert "--allow-client-shm" in security and "--max-shm-regions" in text[text.index("Limits") :]
