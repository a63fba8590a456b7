"""CORS (issue 33): off by default; allowed origins get preflights answered and their
answers marked, on every REST dialect and on the fast lane; credentials as the Fetch
standard says; a page of another origin in headless Chromium reads infer's answer
when allowed and is blocked when not."""

from __future__ import annotations

import http.client
import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from modelplatform.testing import ComposedServer, ServerProcess, free_port, resolved_settings

from ..conftest import MODEL_REPOSITORY

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage")  # fmt: skip
ROW = list(range(16))
INFER = json.dumps({"inputs": [
    {"name": n, "datatype": "INT32", "shape": [1, 16], "data": ROW} for n in ("INPUT0", "INPUT1")
]})  # fmt: skip
#: One path per REST dialect (and the docs), each with a method it serves.
PATHS = [("POST", "/v2/models/simple/infer"), ("GET", "/v2/health/ready"), ("POST", "/v1/models/simple:predict"),
         ("POST", "/grps/v1/infer/predict"), ("POST", "/v2/models/simple/generate"),
         ("POST", "/v2/repository/index"), ("GET", "/v2/systemsharedmemory/status"), ("GET", "/v2/trace/setting"),
         ("POST", "/openai/v1/embeddings"), ("GET", "/openapi.json")]  # fmt: skip


def call(
    port: int, method: str, path: str, headers: dict[str, str], body: str = ""
) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request(method, path, body=body or None, headers=headers)
    reply = connection.getresponse()
    reply.read()
    connection.close()
    return reply


def preflight(
    port: int, path: str, origin: str, method: str = "POST", asked: str = "content-type"
) -> http.client.HTTPResponse:
    headers = {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": asked,
    }
    return call(port, "OPTIONS", path, headers)


def serve(*args: str) -> ServerProcess:
    return ServerProcess("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple", *args)


class _Page(http.server.BaseHTTPRequestHandler):
    page = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture(scope="module")
def pages() -> Iterator[tuple[int, int]]:
    """Two page origins: the server allows the first, not the second."""
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), _Page) for _ in range(2)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield servers[0].server_address[1], servers[1].server_address[1]
    for server in servers:
        server.shutdown()


@pytest.fixture(scope="module")
def allowing(pages: tuple[int, int]) -> Iterator[ServerProcess]:
    with serve(
        "--cors-allow-origin", f"http://127.0.0.1:{pages[0]}", "--cors-allow-origin", "https://other.example"
    ) as running:
        yield running


def test_cors_is_off_by_default() -> None:
    with serve() as plain:
        reply = preflight(plain.http_port, "/v2/models/simple/infer", "https://app.example")
        assert reply.getheader("access-control-allow-origin") is None
        reply = call(plain.http_port, "GET", "/v2/health/ready", {"Origin": "https://app.example"})
        assert reply.status == 200 and reply.getheader("access-control-allow-origin") is None


def test_preflight_answered_on_every_dialect_for_an_allowed_origin(allowing: ServerProcess) -> None:
    for method, path in PATHS:
        reply = preflight(allowing.http_port, path, "https://other.example", method)
        assert reply.status == 200, (path, reply.status)
        assert reply.getheader("access-control-allow-origin") == "https://other.example", path
        assert method in reply.getheader("access-control-allow-methods"), path
        assert reply.getheader("access-control-allow-headers") == "content-type"
        assert (
            "Origin" in reply.getheader("vary")
            and reply.getheader("access-control-allow-credentials") is None
        )


def test_the_fast_lane_and_sanic_answer_a_preflight_alike(allowing: ServerProcess) -> None:
    """``Connection: close`` sends a request to Sanic; without it the lane takes OPTIONS heads."""
    asked = {"Origin": "https://other.example", "Access-Control-Request-Method": "POST"}
    lane = call(allowing.http_port, "OPTIONS", "/v2/models/simple/infer", asked)
    sanic = call(allowing.http_port, "OPTIONS", "/v2/models/simple/infer", {**asked, "Connection": "close"})
    names = ("access-control-allow-origin", "access-control-allow-methods", "access-control-max-age", "vary")
    assert lane.status == sanic.status == 200
    assert [lane.getheader(n) for n in names] == [sanic.getheader(n) for n in names]


def test_preflight_refused_for_other_origins_methods_and_headers(allowing: ServerProcess) -> None:
    path = "/v2/models/simple/infer"
    for reply in (preflight(allowing.http_port, path, "https://evil.example"),
                  preflight(allowing.http_port, path, "https://other.example", "DELETE"),
                  preflight(allowing.http_port, path, "https://other.example", asked="x-secret")):  # fmt: skip
        assert reply.status == 403 and reply.getheader("access-control-allow-origin") is None


def test_answers_carry_the_origin_on_the_fast_lane_and_sanic(allowing: ServerProcess) -> None:
    origin = {"Origin": "https://other.example", "Content-Type": "application/json"}
    infer = call(allowing.http_port, "POST", "/v2/models/simple/infer", origin, INFER)  # hot: the fast lane
    assert infer.status == 200 and infer.getheader("access-control-allow-origin") == "https://other.example"
    assert infer.getheader("access-control-expose-headers") == "inference-header-content-length"
    slow = call(allowing.http_port, "POST", "/v2/models/simple/infer?x=1", origin, INFER)  # a query: Sanic
    assert slow.status == 200 and slow.getheader("access-control-allow-origin") == "https://other.example"
    missing = call(allowing.http_port, "GET", "/v2/no/such/path", origin)
    assert (
        missing.status == 404 and missing.getheader("access-control-allow-origin") == "https://other.example"
    )
    other = call(
        allowing.http_port,
        "POST",
        "/v2/models/simple/infer",
        {**origin, "Origin": "https://evil.example"},
        INFER,
    )
    assert other.status == 200 and other.getheader("access-control-allow-origin") is None


def test_any_origin_and_credentials_follow_the_fetch_standard() -> None:
    with serve("--cors-allow-origin", "*") as anyone:
        reply = preflight(anyone.http_port, "/v2/models/simple/infer", "https://app.example")
        assert reply.status == 200 and reply.getheader("access-control-allow-origin") == "*"
        assert reply.getheader("vary") is None
    with serve("--cors-allow-origin", "https://app.example", "--cors-allow-credentials") as trusted:
        reply = preflight(trusted.http_port, "/v2/models/simple/infer", "https://app.example")
        assert reply.getheader("access-control-allow-origin") == "https://app.example"
        assert reply.getheader("access-control-allow-credentials") == "true"
    refused = subprocess.run(
        [sys.executable, "-m", "modelplatform", "serve", "--cors-allow-origin", "*", "--cors-allow-credentials", "--model-repository",
         str(MODEL_REPOSITORY)], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode != 0 and "cannot be combined" in refused.stderr + refused.stdout


def _page(server_port: int) -> bytes:
    script = f"""
fetch("http://127.0.0.1:{server_port}/v2/models/simple/infer", {{method: "POST",
      headers: {{"Content-Type": "application/json"}}, body: JSON.stringify({INFER})}})
  .then(r => r.json())
  .then(j => {{ document.getElementById("out").textContent = "answered:" + j.outputs.map(o => o.name).join(","); }})
  .catch(e => {{ document.getElementById("out").textContent = "blocked:" + e.name; }});
"""
    return f'<!DOCTYPE html><html><body><pre id="out">pending</pre><script>{script}</script></body></html>'.encode()


def _dom(url: str, profile: Path) -> str:
    command = [
        CHROMIUM,
        *FLAGS,
        f"--user-data-dir={profile}",
        "--virtual-time-budget=10000",
        "--dump-dom",
        url,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=90).stdout


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make chromium)")
def test_a_page_of_another_origin_reads_infer_only_when_allowed(
    allowing: ServerProcess, pages: tuple[int, int], tmp_path: Path
) -> None:
    _Page.page = _page(allowing.http_port)
    allowed, other = pages
    out = re.compile(r'<pre id="out">([^<]*)</pre>')
    shown = out.search(_dom(f"http://127.0.0.1:{allowed}/", tmp_path / "a"))
    assert shown is not None and shown.group(1) == "answered:OUTPUT0,OUTPUT1"
    shown = out.search(_dom(f"http://127.0.0.1:{other}/", tmp_path / "b"))
    assert shown is not None and shown.group(1).startswith("blocked:")


async def test_the_harness_answers_cors_as_both_paths_do() -> None:
    settings = resolved_settings(model_repository=str(MODEL_REPOSITORY), load_models=("simple",),
                                 cors_allow_origin=("https://app.example",))  # fmt: skip
    server = ComposedServer(settings)
    await server.start()
    asked = {"origin": "https://app.example", "access-control-request-method": "POST"}
    reply = await server.http("OPTIONS", "/v2/models/simple/infer", headers=asked)
    assert reply.status == 200 and reply.headers["access-control-allow-origin"] == "https://app.example"
    ready = await server.http("GET", "/v2/health/ready", headers={"origin": "https://app.example"})
    assert ready.status == 200 and ready.headers["access-control-allow-origin"] == "https://app.example"
    await server.close()
