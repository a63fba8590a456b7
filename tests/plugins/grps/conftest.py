"""A grps test server: the bundled models plus test models, one per module."""

from __future__ import annotations

import http.client
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from modelplatform.testing import ServerProcess

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
BUNDLED = ("identity_bytes", "identity_fp32", "simple", "saved_model_half_plus_three", "stream_counter")


def make_repository(
    target: Path, extra: tuple[str, ...] = ("stream_progress", "stream_fail", "custom_echo")
) -> Path:
    for name in BUNDLED:
        shutil.copytree(ROOT / "model_repository" / name, target / name)
    for name in extra:
        shutil.copytree(HERE / "models" / name, target / name)
    return target


def write_config(path: Path, options: str) -> Path:
    path.write_text(f"[plugins.grps]\n{options}\n")
    return path


@pytest.fixture(scope="module")
def grps_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    base = tmp_path_factory.mktemp("grps")
    repository = make_repository(base / "models")
    config = write_config(base / "config.toml", 'default_model = "identity_fp32-1"')
    with ServerProcess("--model-repository", str(repository), "--config", str(config)) as server:
        yield server


def call(
    server: ServerProcess,
    method: str,
    path: str,
    body: bytes | dict | None = None,
    content_type: str | None = "application/json",
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    payload = orjson.dumps(body) if isinstance(body, dict) else body
    sent = dict(headers or {})
    if content_type is not None:
        sent["Content-Type"] = content_type
    connection.request(method, path, body=payload, headers=sent)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, data


def call_json(
    server: ServerProcess, method: str, path: str, body: Any = None, **kwargs: Any
) -> tuple[int, dict]:
    status, _, data = call(server, method, path, body, **kwargs)
    return status, orjson.loads(data)
