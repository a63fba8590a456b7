"""The fast lane's one seam with Sanic: fails when a Sanic release changes what it relies on.

http/sanic_seam.py reads five private facts of Sanic's HTTP protocol object.
These tests look at each on a live connection of a real server, and check
that core's pyproject pins the Sanic range the seam was checked against.
"""

from __future__ import annotations

import asyncio
import inspect
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from sanic.http import Stage
from sanic.server.protocols.http_protocol import HttpProtocol

from modelplatform import Settings
from modelplatform.frontends.http import sanic_seam
from modelplatform.frontends.http.fastlane import FastLaneProtocol
from modelplatform.testing import InProcessServer, free_port

ROOT = Path(__file__).resolve().parents[2]


def test_installed_sanic_is_in_the_tested_and_pinned_range():
    installed = version("sanic")
    assert installed in SpecifierSet(sanic_seam.TESTED_SANIC), installed
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pinned = [d for d in dependencies if d.startswith("sanic")]
    assert pinned == [f"sanic{sanic_seam.TESTED_SANIC}"]


def test_the_protocol_methods_the_lane_overrides_keep_their_signatures():
    for name, parameters in {
        "data_received": ["self", "data"],
        "connection_lost": ["self", "exc"],
        "close_if_idle": ["self"],
        "check_timeouts": ["self"],
    }.items():
        assert list(inspect.signature(getattr(HttpProtocol, name)).parameters) == parameters, name
    assert {"_http", "recv_buffer"} <= set(HttpProtocol.__slots__)
    assert Stage.IDLE in Stage


async def test_a_live_connection_has_what_the_seam_reads(tmp_path: Path):
    settings = Settings(model_repository=tmp_path, host="127.0.0.1", http_port=free_port(),
                        grpc_port=free_port(), plugins=("oip-rest",))  # fmt: skip
    seen: list[FastLaneProtocol] = []
    original = FastLaneProtocol.__init__

    def remember(self, *args, **kwargs):
        original(self, *args, **kwargs)
        seen.append(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(FastLaneProtocol, "__init__", remember)
        async with InProcessServer(settings):
            reader, writer = await asyncio.open_connection("127.0.0.1", settings.http_port)
            writer.write(b"GET /v2/health/live HTTP/1.1\r\nHost: t\r\n\r\n")
            assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
            protocol = seen[-1]
            assert isinstance(protocol._can_write, asyncio.Event)
            assert isinstance(protocol._time, float)
            assert isinstance(protocol.recv_buffer, bytearray)
            assert protocol._http.stage in Stage and hasattr(protocol._http, "request_body")
            assert protocol.sanic_idle()
            assert protocol.app.config.REQUEST_MAX_SIZE == settings.max_request_bytes
            writer.close()
