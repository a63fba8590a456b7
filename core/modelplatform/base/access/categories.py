"""API categories: what an operator restricts and what an API key may call.

Triton's restricted-API names, plus ``metrics`` (the Prometheus text) and
``admin`` (operations on the server itself, e.g. grps online/offline) and ``docs``
(what describes the API: OpenAPI documents, the docs page, gRPC reflection). Every
HTTP route and every gRPC method declares exactly one (HttpRoute.category,
GrpcService.categories).
"""

from __future__ import annotations

from collections.abc import Iterable

from modelplatform.base.errors import PluginError

HEALTH = "health"
METADATA = "metadata"
INFERENCE = "inference"
SHARED_MEMORY = "shared-memory"
MODEL_CONFIG = "model-config"
MODEL_REPOSITORY = "model-repository"
STATISTICS = "statistics"
TRACE = "trace"
LOGGING = "logging"
METRICS = "metrics"
ADMIN = "admin"
#: What describes the API: the OpenAPI documents, the /docs page, gRPC server reflection.
DOCS = "docs"

#: Every category name, in the order the docs list them.
CATEGORIES: tuple[str, ...] = (
    HEALTH, METADATA, INFERENCE, SHARED_MEMORY, MODEL_CONFIG, MODEL_REPOSITORY,
    STATISTICS, TRACE, LOGGING, METRICS, ADMIN, DOCS,
)  # fmt: skip
_KNOWN = frozenset(CATEGORIES)


def is_category(name: str) -> bool:
    return name in _KNOWN


def check_category(name: str, where: str) -> None:
    """Refuse a declaration naming an unknown category ("" means undeclared: allowed here,
    refused by the access checks whenever access control is on)."""
    if name and name not in _KNOWN:
        raise PluginError(f"{where}: unknown API category '{name}' (known: {', '.join(CATEGORIES)})")


def unknown_categories(names: Iterable[str]) -> list[str]:
    """The names in ``names`` that are no category (for settings and key files)."""
    return [name for name in names if name not in _KNOWN]
