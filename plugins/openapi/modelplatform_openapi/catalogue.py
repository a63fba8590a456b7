"""Which documents the server publishes, and the routes each covers.

- everything together (``/openapi.json``);
- each dialect (``/openapi/<dialect>.json``);
- each path prefix (``/v2/openapi.json``): every dialect serving under it (OIP,
  repository, shared memory, generate, trace share ``/v2``). A dialect's prefix
  is its ``path_prefix``, else the first segment all its routes share (when it
  has more than one route); a prefix where another route already answers
  ``<prefix>/openapi.json`` (TF Serving's catch-all under ``/v1``) has none;
- each model (``/v2/models/<model>/openapi.json``): every route whose path names
  a model, the model written in, its requests described from its metadata.

Routes are read from ``ServerContext.routes_of``: the declarations the front end
serves, asked of each dialect once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from modelplatform import ServerContext, __version__

from .documents import Entry, Scope, document
from .paths import matches, parameter_names

TITLE = "modelplatform"


@dataclass(frozen=True, slots=True)
class Catalogue:
    """One server's routes, grouped as the documents group them."""

    context: ServerContext

    def entries(self, dialects: Iterable[str] | None = None) -> list[Entry]:
        names = self.context.dialects if dialects is None else dialects
        found = self.context.dialects
        return [Entry(found[name], route) for name in names for route in self.context.routes_of(name)]

    def dialect_names(self) -> list[str]:
        return list(self.context.dialects)

    def everything(self) -> dict[str, Any]:
        return document(self.entries(), self._scope(TITLE))

    def dialect(self, name: str) -> dict[str, Any] | None:
        if name not in self.context.dialects:
            return None
        return document(self.entries([name]), self._scope(f"{TITLE}: {name}"))

    def prefix(self, prefix: str, dialects: Iterable[str]) -> dict[str, Any]:
        chosen = list(dialects)
        return document(self.entries(chosen), self._scope(f"{TITLE}: {prefix} ({', '.join(chosen)})"))

    def model(self, model: str, metadata: Any) -> dict[str, Any]:
        entries = [e for e in self.entries() if model_parameter(e) is not None]
        scope = Scope(f"{TITLE}: model {model}", __version__, {"model": model}, metadata)
        return document(entries, scope)

    def _scope(self, title: str) -> Scope:
        return Scope(title, __version__, {})


def model_parameter(entry: Entry) -> str | None:
    """``model`` when the route's path names a model with it (the dialects' convention)."""
    return "model" if "model" in parameter_names(entry.route.path) else None


def prefixes(context: ServerContext, own: str) -> dict[str, list[str]]:
    """Path prefix -> the dialects serving under it (``own``, this plugin, excluded)."""
    grouped: dict[str, list[str]] = {}
    for name, dialect in context.dialects.items():
        if name == own:
            continue
        prefix = dialect.path_prefix.rstrip("/") or _shared_segment(
            [route.path for route in context.routes_of(name)]
        )
        if prefix:
            grouped.setdefault(prefix, []).append(name)
    return {
        prefix: names
        for prefix, names in grouped.items()
        if not _taken(context, own, f"{prefix}/openapi.json")
    }


def _taken(context: ServerContext, own: str, path: str) -> bool:
    """Whether another dialect answers ``path`` (TF Serving's ``/v1/{path:path}`` takes
    ``/v1/openapi.json``: its document is at ``/openapi/tfserving-rest.json`` only)."""
    return any(
        matches(route.path, path)
        for name in context.dialects
        if name != own
        for route in context.routes_of(name)
    )


def _shared_segment(paths: list[str]) -> str:
    if len(paths) < 2:
        return ""
    firsts = {"/" + path.lstrip("/").split("/", 1)[0] for path in paths}
    only = firsts.pop() if len(firsts) == 1 else ""
    return "" if "{" in only or only == "/" else only
