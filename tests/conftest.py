"""Shared fixtures: a real `platform serve` subprocess on free ports."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from modelplatform.testing import ServerProcess

ROOT = Path(__file__).resolve().parent.parent
MODEL_REPOSITORY = ROOT / "model_repository"


@pytest.fixture(scope="session")
def server() -> Iterator[ServerProcess]:
    """One server for the session, serving the bundled model repository."""
    with ServerProcess("--model-repository", str(MODEL_REPOSITORY)) as process:
        yield process
