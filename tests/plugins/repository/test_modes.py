"""Control modes (none, poll), the restricted-API header, and the upload switch."""

from __future__ import annotations

import json
import shutil
import time

import pytest

from modelplatform.testing import ServerProcess

from .helpers import grpc_client, index, infer, post
from .models import MODEL_PY, config_json, config_text, write_model

HEADER = {"x-admin-key": "s3cret"}


@pytest.fixture(scope="module")
def restricted(tmp_path_factory):
    root = tmp_path_factory.mktemp("restricted")
    write_model(root, "echo", factor="2")
    with ServerProcess(
        "--model-repository", str(root), "--repository-restrict", "X-Admin-Key:s3cret"
    ) as process:
        yield process


def test_restricted_api_needs_the_header_over_http(restricted):
    url = restricted.http_url
    for path in ("/v2/repository/index", "/v2/repository/models/echo/unload"):
        status, error = post(url, path, b"")
        assert status == 403 and error == {"error": "This API is restricted, expecting header 'x-admin-key'"}
        assert post(url, path, b"", {"X-Admin-Key": "wrong"})[0] == 403
    assert post(url, "/v2/repository/models/echo/unload", b"", {"X-ADMIN-KEY": "s3cret"})[0] == 200
    assert post(url, "/v2/repository/models/echo/load", b"{}", HEADER)[0] == 200
    assert infer(url, "echo", [1.0])[0] == 200  # inference itself is not restricted


def test_restricted_api_needs_the_header_over_grpc(restricted):
    result = grpc_client(
        restricted.grpc_url,
        """
        try:
            client.get_model_repository_index()
            denied = None
        except InferenceServerException as e:
            denied = [e.status(), e.message()]
        try:
            client.get_model_repository_index(headers={"x-admin-key": "s3cret"})
            bare = None
        except InferenceServerException as e:
            bare = [e.status(), e.message()]
        triton = client.get_model_repository_index(
            headers={"triton-grpc-protocol-x-admin-key": "s3cret"}, as_json=True)
        result = [denied, bare, [m["name"] for m in triton["models"]]]
    """,
    )
    # --repository-restrict is now a spelling of the restricted-protocol flags (issue 16): gRPC
    # answers as Triton does for a restricted protocol, UNAVAILABLE naming its metadata key.
    expected = "This protocol is restricted, expecting header 'triton-grpc-protocol-x-admin-key'"
    assert result[0] == ["StatusCode.UNAVAILABLE", expected]
    # The bare header is not Triton's metadata for a restricted protocol: refused (issue 29).
    assert result[1] == ["StatusCode.UNAVAILABLE", expected]
    assert result[2] == ["echo"]  # Triton's own metadata name for restricted protocols


def test_uploads_are_refused_unless_the_operator_allows_them(restricted):
    body = {"parameters": {"config": config_json(), "file:1/model.py": ""}}
    status, error = post(
        restricted.http_url, "/v2/repository/models/up/load", json.dumps(body).encode(), HEADER
    )
    assert status == 403 and "--allow-file-upload" in error["error"]
    assert "up" not in index_with_header(restricted.http_url)


def index_with_header(url: str) -> dict:
    status, entries = post(url, "/v2/repository/index", b"", HEADER)
    assert status == 200
    return {e["name"]: e for e in entries}


def test_none_mode_loads_everything_and_refuses_the_api(tmp_path):
    write_model(tmp_path, "a")
    write_model(tmp_path, "b")
    with ServerProcess("--model-repository", str(tmp_path), "--model-control-mode", "none") as server:
        assert {e["state"] for e in index(server.http_url).values()} == {"READY"}
        status, error = post(server.http_url, "/v2/repository/models/a/unload", b"")
        assert status == 503 and "explicit model load / unload is not allowed" in error["error"]
        assert post(server.http_url, "/v2/repository/models/a/load", b"{}")[0] == 503
        assert index(server.http_url)["a"]["state"] == "READY"


def _wait_for(predicate, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_poll_mode_follows_a_model_copied_in_and_out(tmp_path, tmp_path_factory):
    repo = tmp_path / "repo"
    write_model(repo, "base")
    log_path = tmp_path_factory.mktemp("poll") / "loads.txt"
    with ServerProcess(
        "--model-repository", str(repo), "--model-control-mode", "poll", "--repository-poll-secs", "0.2"
    ) as server:
        url = server.http_url
        assert post(url, "/v2/repository/models/base/unload", b"")[0] == 503
        # Copy a model in slowly: model.py grows for ~1.2 s, several poll intervals.
        folder = repo / "arriving"
        (folder / "1").mkdir(parents=True)
        (folder / "config.pbtxt").write_text(config_text("arriving", log_path=str(log_path)))
        source = MODEL_PY.encode()
        with (folder / "1" / "model.py").open("wb") as target:
            for start in range(0, len(source), len(source) // 12 + 1):
                target.write(source[start : start + len(source) // 12 + 1])
                target.flush()
                time.sleep(0.1)
                assert "arriving" not in index(url) or index(url)["arriving"] == {"name": "arriving"}
        assert _wait_for(lambda: index(url).get("arriving", {}).get("state") == "READY")
        assert log_path.read_text() == "load\n"  # loaded once, never half-written
        assert infer(url, "arriving", [3.0])[1]["outputs"][0]["data"] == [3.0]
        shutil.rmtree(folder)
        assert _wait_for(lambda: index(url)["arriving"].get("state") == "UNAVAILABLE")
        assert infer(url, "arriving", [3.0])[0] != 200
        assert index(url)["base"]["state"] == "READY"
        assert "model_load_failed" not in server.log()
