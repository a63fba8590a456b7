"""Shared fixtures: a real `platform serve` subprocess on free ports, a real S3 server (moto)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from modelplatform.testing import ServerProcess

if TYPE_CHECKING:
    from tests.plugins.storage.s3_server import MotoServer

ROOT = Path(__file__).resolve().parent.parent
MODEL_REPOSITORY = ROOT / "model_repository"


@pytest.fixture(scope="session")
def server() -> Iterator[ServerProcess]:
    """One server for the session, serving the bundled model repository."""
    with ServerProcess("--model-repository", str(MODEL_REPOSITORY)) as process:
        yield process


@pytest.fixture(scope="module")
def s3() -> Iterator[MotoServer]:
    """A real S3-compatible server (moto), one per test module that asks for it."""
    from tests.plugins.storage.s3_server import MotoServer  # boto3 only when used

    with MotoServer() as server:
        yield server
