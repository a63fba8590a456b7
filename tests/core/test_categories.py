"""Every HTTP route and every gRPC method of every installed plugin declares a known API category."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pool

from modelplatform import GrpcService, HttpDialect, HttpReply, HttpRoute, PluginError, Settings
from modelplatform.base.access.categories import CATEGORIES, is_category
from modelplatform.composition.server import compose
from modelplatform.frontends.grpc_access import check_categories
from modelplatform.frontends.http.routing import Router
from modelplatform.testing import free_port

GRPS_MODELS = Path(__file__).resolve().parents[1] / "plugins" / "grps" / "models"


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Every installed plugin, and a model with its own grps HTTP route (custom routes too)."""
    repository = tmp_path_factory.mktemp("categories")
    shutil.copytree(GRPS_MODELS / "custom_echo", repository / "custom_echo")
    settings = Settings(model_repository=repository, host="127.0.0.1", http_port=free_port(),
                        grpc_port=free_port(), plugin_options={"metrics": {"metrics_port": 0}})  # fmt: skip
    return compose(settings).context


def test_every_http_route_of_every_dialect_has_a_category(context: Any) -> None:
    seen, missing = 0, []
    for dialect in context.dialects.values():
        for route in dialect.routes(context):
            seen += 1
            if not is_category(route.category):
                missing.append(
                    f"{dialect.name}: {sorted(route.methods)} {route.describe()} -> {route.category!r}"
                )
    assert missing == []
    assert seen > 40  # oip, repository, tfserving, grps (custom route included), metrics, tracing
    assert {"grps-rest", "tfserving-rest", "oip-rest", "repository", "metrics"} <= set(context.dialects)


def test_a_custom_route_takes_the_category_its_model_chose(context: Any) -> None:
    routes = {route.path: route for route in context.dialects["grps-rest"].routes(context)}
    assert routes["/custom/echo"].category == "inference"  # no grps.http_category: inference
    assert routes["/grps/v1/health/online"].category == "admin"
    assert routes["/grps/v1/health/live"].category == "health"


class _Recorder:
    """Stands in for grpc.aio.Server: keeps the handlers a service adds."""

    def __init__(self) -> None:
        self.generic: list[Any] = []
        self.registered: dict[str, set[str]] = {}

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        self.generic.extend(handlers)

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        self.registered.setdefault(service, set()).update(handlers)

    def served(self, service: str) -> set[str]:
        """The methods of ``service`` (named by its proto) some recorded handler answers."""
        served = set(self.registered.get(service, ()))
        for method in _proto_methods(service):
            details = _Details(f"/{service}/{method}")
            if any(handler.service(details) is not None for handler in self.generic):
                served.add(method)
        return served


def _proto_methods(service: str) -> list[str]:
    """The methods the service's proto declares (generated stubs register theirs by name)."""
    try:
        return [method.name for method in descriptor_pool.Default().FindServiceByName(service).methods]
    except KeyError:  # its *_pb2 module is not imported: the stubs registered every method
        return []


class _Details(grpc.HandlerCallDetails):
    def __init__(self, method: str) -> None:
        self.method = method
        self.invocation_metadata = ()


def test_every_grpc_method_of_every_service_has_a_category(context: Any) -> None:
    served_by: dict[str, set[str]] = {}
    for service in context.grpc_services:
        recorder = _Recorder()
        service.add_to_server(recorder, context)
        served = recorder.served(service.name)
        assert served, f"{service.name}: the recorder saw no method"
        missing = sorted(m for m in served if not is_category(service.categories.get(m, "")))
        assert missing == [], f"{service.name} serves methods without a category: {missing}"
        served_by.setdefault(service.name, set()).update(served)
    assert {"ModelInfer", "RepositoryIndex", "TraceSetting", "LogSettings"} <= served_by[
        "inference.GRPCInferenceService"
    ]
    assert {"Predict", "Online"} <= served_by["grps.protos.v1.GrpsService"]
    assert "Check" in served_by["grpc.health.v1.Health"]


async def _handler(request: Any) -> HttpReply:
    return HttpReply()


def test_an_unknown_http_category_stops_registration() -> None:
    dialect = HttpDialect("d", lambda context: [], lambda error: 500)
    route = HttpRoute(("GET",), "/x", _handler, category="inferense")
    with pytest.raises(PluginError, match="unknown API category 'inferense'"):
        Router([dialect], {"d": [route]})
    Router([dialect], {"d": [HttpRoute(("GET",), "/x", _handler, category="inference")]})


def test_an_unknown_grpc_category_stops_registration() -> None:
    service = GrpcService("s.S", lambda server, context: None, categories={"Do": "admin", "Peek": "statz"})
    with pytest.raises(PluginError, match="/s.S/Peek: unknown API category 'statz'"):
        check_categories([service])


def test_the_categories_are_tritons_plus_metrics_and_admin() -> None:
    triton = {"health", "metadata", "inference", "shared-memory", "model-config", "model-repository",
              "statistics", "trace", "logging"}  # fmt: skip
    assert set(CATEGORIES) == triton | {"metrics", "admin", "docs"}  # docs: issue 33
