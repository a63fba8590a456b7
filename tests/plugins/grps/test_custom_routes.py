"""A model's custom HTTP path that collides with a built-in route stops start-up."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from modelplatform.testing import ServerProcess

from .conftest import HERE


def _repository(tmp_path: Path, path: str) -> Path:
    repository = tmp_path / "models"
    shutil.copytree(HERE / "models" / "custom_echo", repository / "custom_echo")
    config = repository / "custom_echo" / "config.pbtxt"
    config.write_text(config.read_text().replace('"/custom/echo"', f'"{path}"'))
    return repository


@pytest.mark.parametrize(
    ("path", "owner"),
    [
        ("/grps/v1/infer/predict", "grps built-in"),  # grps's own route
        ("/v2/health/ready", "/v2/health/ready"),  # another dialect's static route
        ("/v2/models/custom_echo/infer", "/v2/models/{"),  # shadows a route with parameters
        ("/grps/v1/monitor", "grps built-in"),  # grps's monitor page
        ("/", "live page"),  # the server's live page (metrics plugin)
    ],
)
def test_colliding_custom_path_fails_at_start(tmp_path: Path, path: str, owner: str) -> None:
    server = ServerProcess("--model-repository", str(_repository(tmp_path, path)), timeout=30)
    with pytest.raises(RuntimeError) as failed:
        server.__enter__()
    server.stop()
    log = str(failed.value)
    assert "custom_echo" in log and "grps.http_path" in log or "collides" in log
    assert owner in log
