"""API keys rotate without a restart: the file rewritten while the server runs (every worker),
a broken rewrite keeps the keys already loaded; JSON files work like TOML."""

from __future__ import annotations

import json
import os
from pathlib import Path

from modelplatform.testing import ServerProcess

from ..conftest import MODEL_REPOSITORY
from .access_clients import SIMPLE_BODY, request, wait_until
from .test_access_keys import bearer, keys_toml, sha256

OLD, NEW = "old-key-51c2", "new-key-9ae0"


def _replace(path: Path, text: str) -> None:
    """Write beside and rename over, as a mounted secret or an editor's save does."""
    staged = path.with_suffix(".staged")
    staged.write_text(text)
    os.replace(staged, path)


def _infer(server: ServerProcess, key: str) -> int:
    return request(server.http_port, "POST", "/v2/models/simple/infer", SIMPLE_BODY, bearer(key))[0]


def _status(server: ServerProcess, path: str) -> int:
    return request(server.http_port, "GET", path)[0]


def test_a_rewritten_file_is_picked_up_and_a_broken_one_keeps_the_old_keys(tmp_path: Path) -> None:
    keys = tmp_path / "keys.toml"
    keys.write_text(keys_toml(("first", OLD, ["inference"], None)))
    with ServerProcess("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple",
                       "--api-keys-file", str(keys), "--workers", "2") as server:  # fmt: skip
        # Health is open for probes: every worker answers ready before the keys are tried.
        assert wait_until(lambda: all(_status(server, "/v2/health/ready") == 200 for _ in range(8)), 60)
        assert _infer(server, OLD) == 200 and _infer(server, NEW) == 401
        _replace(keys, keys_toml(("second", NEW, ["inference"], None)))
        # Each worker polls on its own: enough answers in a row that both have reloaded.
        assert wait_until(lambda: all(_infer(server, NEW) == 200 for _ in range(8)))
        assert all(_infer(server, OLD) == 401 for _ in range(8))
        assert "api_keys_reloaded" in server.log()
        keys.write_text("[[keys]\nthis is not toml")  # in place, half-written
        # The file is checked (at most once a second) when requests arrive.
        assert wait_until(lambda: _infer(server, NEW) == 200 and "api_keys_reload_failed" in server.log())
        assert all(_infer(server, NEW) == 200 for _ in range(8))  # the loaded keys stay
        assert NEW not in server.log() and OLD not in server.log()


def test_a_json_keys_file_works_like_toml(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"keys": [{"name": "j", "sha256": sha256(NEW), "categories": ["inference"],
                                          "models": ["simple"]}]}))  # fmt: skip
    with ServerProcess("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple",
                       "--api-keys-file", str(keys), "--no-api-keys-open-health") as server:  # fmt: skip
        assert _infer(server, NEW) == 200 and _infer(server, OLD) == 401
        assert request(server.http_port, "GET", "/v2/health/ready")[0] == 401  # health closed too
