"""The OpenAPI documents (issue 33): valid OpenAPI 3.1, made from the route declarations
(a third-party dialect's routes included), per dialect, per prefix and per model."""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from openapi_spec_validator import OpenAPIV31SpecValidator

from modelplatform import HttpDialect, HttpReply, HttpRequest, HttpRoute, RouteDoc, hookimpl
from modelplatform.testing import ComposedServer, ServerProcess, resolved_settings

from ...conftest import MODEL_REPOSITORY

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage")  # fmt: skip


def get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, str, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", path, headers=headers or {})
        reply = connection.getresponse()
        return reply.status, reply.getheader("content-type") or "", reply.read()
    finally:
        connection.close()


def document(port: int, path: str) -> dict[str, Any]:
    status, content_type, body = get(port, path)
    assert status == 200 and content_type.startswith("application/json"), (path, status, body[:300])
    return json.loads(body)


def invalid(doc: dict[str, Any]) -> list[str]:
    return [str(error)[:300] for error in OpenAPIV31SpecValidator(doc).iter_errors()]


@pytest.fixture(scope="module")
def server():
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple")
    with ServerProcess(*args) as running:
        yield running


def test_every_document_is_valid_openapi_3_1(server: ServerProcess) -> None:
    everything = document(server.http_port, "/openapi.json")
    assert everything["openapi"] == "3.1.0"
    paths = ["/openapi.json", "/v2/openapi.json", "/grps/v1/openapi.json", "/v2/models/simple/openapi.json"]
    dialects = {tag["description"].split("'")[1] for tag in everything["tags"]}
    assert {"oip-rest", "tfserving-rest", "grps-rest", "generate", "repository", "shared-memory",
            "oip-trace", "openai"} <= dialects  # fmt: skip
    paths += [f"/openapi/{name}.json" for name in sorted(dialects)]
    for path in paths:
        assert invalid(document(server.http_port, path)) == [], path


def test_the_whole_document_has_each_dialects_routes_with_their_bodies(server: ServerProcess) -> None:
    paths = document(server.http_port, "/openapi.json")["paths"]
    infer = paths["/v2/models/{model}/infer"]["post"]
    schema = infer["requestBody"]["content"]["application/json"]["schema"]
    assert (
        schema["required"] == ["inputs"]
        and "datatype" in schema["properties"]["inputs"]["items"]["properties"]
    )
    assert "application/octet-stream" in infer["responses"]["200"]["content"]
    assert infer["responses"]["default"]["content"]["application/json"]["schema"]["required"] == ["error"]
    assert {p["name"] for p in infer["parameters"]} == {"model"}
    assert "post" in paths["/v1/models/{model}:{verb}"]
    verb = next(p for p in paths["/v1/models/{model}:{verb}"]["post"]["parameters"] if p["name"] == "verb")
    assert verb["schema"]["pattern"] == "^(?:classify|regress|predict)$"
    grps_error = paths["/grps/v1/infer/predict"]["post"]["responses"]["default"]["content"]
    assert grps_error["application/json"]["schema"]["required"] == ["status"]
    for path in (
        "/v2/repository/index",
        "/v2/systemsharedmemory/status",
        "/v2/trace/setting",
        "/v2/logging",
        "/v2/models/{model}/generate_stream",
        "/openai/v1/chat/completions",
        "/v2/health/ready",
    ):
        assert path in paths, path  # fmt: skip
    assert paths["/v2/health/ready"]["get"]["x-api-category"] == "health"


def test_a_prefix_document_holds_only_its_prefix(server: ServerProcess) -> None:
    v2 = document(server.http_port, "/v2/openapi.json")["paths"]
    assert "/v2/models/{model}/infer" in v2 and "/v2/repository/index" in v2
    assert all(path.startswith("/v2") for path in v2)
    one = document(server.http_port, "/openapi/tfserving-rest.json")["paths"]
    assert all(path.startswith("/v1/") for path in one) and "/v1/models" in one


def test_the_model_document_names_its_inputs_datatypes_and_shapes(server: ServerProcess) -> None:
    doc = document(server.http_port, "/v2/models/simple/openapi.json")
    infer = doc["paths"]["/v2/models/simple/infer"]["post"]
    assert "parameters" not in infer  # the model is written into the path
    inputs = infer["requestBody"]["content"]["application/json"]["schema"]["properties"]["inputs"]
    described = {
        item["properties"]["name"]["enum"][0]: item["properties"] for item in inputs["items"]["oneOf"]
    }
    assert set(described) == {"INPUT0", "INPUT1"}
    assert described["INPUT0"]["datatype"]["enum"] == ["INT32"]
    assert described["INPUT0"]["shape"]["minItems"] == described["INPUT0"]["shape"]["maxItems"] == 2
    assert "16" in described["INPUT0"]["shape"]["description"]
    assert all("{model}" not in path for path in doc["paths"])
    assert get(server.http_port, "/v2/models/no_such_model/openapi.json")[0] == 404


def test_the_docs_page_and_its_assets_are_served_from_the_package(server: ServerProcess) -> None:
    status, content_type, page = get(server.http_port, "/docs")
    assert status == 200 and content_type.startswith("text/html")
    assert b"https://" not in page and b"http://" not in page
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "modelplatform-docs.js"):
        status, _, body = get(server.http_port, f"/docs/{asset}")
        assert status == 200 and len(body) > 100, asset
    assert get(server.http_port, "/docs/index.j2")[0] == 404  # only the files the page uses


class ThirdParty:
    """A dialect written by someone else: its routes are documented with no extra work."""

    @staticmethod
    async def hello(request: HttpRequest) -> HttpReply:
        return HttpReply(200, b'{"hello": "world"}')

    @hookimpl
    def register_http_dialects(self, settings: Any) -> list[HttpDialect]:
        doc = RouteDoc(summary="Say hello", responses={200: {"type": "object"}})
        routes = [HttpRoute(("GET",), "/acme/v1/hello/{who}", self.hello, category="metadata", doc=doc),
                  HttpRoute(("POST",), "/acme/v1/bare", self.hello, category="metadata")]  # fmt: skip
        return [HttpDialect("acme", lambda context: routes, lambda error: 400, path_prefix="/acme/v1/")]


async def test_a_third_party_dialect_appears_in_the_documents() -> None:
    settings = resolved_settings(model_repository=str(MODEL_REPOSITORY), load_models=())
    server = ComposedServer(settings, [ThirdParty()])
    await server.start()
    reply = await server.http("GET", "/openapi.json")
    paths = json.loads(bytes(reply.body))["paths"]  # type: ignore[arg-type]  # one buffer
    assert paths["/acme/v1/hello/{who}"]["get"]["summary"] == "Say hello"
    assert paths["/acme/v1/bare"]["post"]["responses"]["200"] == {"description": "OK"}
    own = json.loads(bytes((await server.http("GET", "/acme/v1/openapi.json")).body))  # type: ignore[arg-type]  # one buffer
    assert set(own["paths"]) == {"/acme/v1/hello/{who}", "/acme/v1/bare"}
    assert invalid(own) == []


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make chromium)")
def test_the_docs_page_renders_the_operations_in_chromium_offline(
    server: ServerProcess, tmp_path: Path
) -> None:
    """Swagger UI loads from the server alone (no network beyond it) and lists the routes."""
    command = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=15000",
               "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
               "--dump-dom", f"http://{server.http_url}/docs"]  # fmt: skip
    dom = subprocess.run(command, capture_output=True, text=True, timeout=120).stdout
    assert 'class="swagger-ui' in dom, dom[:2000]
    assert "/v2/models/{model}/infer" in dom and "/v1/models/{model}:{verb}" in dom, dom[:3000]
    assert "Unable to render this definition" not in dom
    model = subprocess.run([*command[:-1], f"http://{server.http_url}/v2/models/simple/docs"],
                           capture_output=True, text=True, timeout=120).stdout  # fmt: skip
    assert "/v2/models/simple/infer" in model, model[:3000]


def test_the_documents_and_page_are_a_category_that_can_be_restricted() -> None:
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple",
            "--http-restricted-api", "docs:docs-key=open")  # fmt: skip
    with ServerProcess(*args) as running:
        for path in ("/openapi.json", "/v2/openapi.json", "/v2/models/simple/openapi.json", "/docs",
                     "/docs/swagger-ui.css"):  # fmt: skip
            status, _, body = get(running.http_port, path)
            assert status == 403 and b"docs-key" in body, path
            assert get(running.http_port, path, {"docs-key": "open"})[0] == 200, path
        assert get(running.http_port, "/v2/health/ready")[0] == 200  # other categories stay open
