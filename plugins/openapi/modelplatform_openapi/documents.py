"""One OpenAPI 3.1 document from declared routes: paths, operations, schemas.

Everything comes from the declarations (``HttpRoute`` and its optional
``RouteDoc``, ``HttpDialect``): a third-party dialect's routes appear with their
methods, paths and parameters and its error shape, and with whatever its
``RouteDoc`` adds. Errors a route does not list fall under ``default``, in the
error shape its dialect renders (asked of the dialect itself, so the content
type is the one it really sends).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from modelplatform import HttpDialect, HttpRoute

from .paths import openapi_path

OPENAPI_VERSION = "3.1.0"
#: What a route's 200 answer says when its declaration documents none.
_UNDOCUMENTED_OK = {"description": "OK"}
_NOT_WORD = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True, slots=True)
class Entry:
    """One declared route and the dialect that declared it."""

    dialect: HttpDialect
    route: HttpRoute


@dataclass(frozen=True, slots=True)
class Scope:
    """What a document covers beyond its routes: its title, fixed path parameters, a model."""

    title: str
    version: str
    #: Path parameter -> the value written into every path (the model of a per-model document).
    fixed: Mapping[str, str]
    #: The model's metadata for RouteDoc.model_request (a per-model document), else None.
    metadata: Any = None


def document(entries: Iterable[Entry], scope: Scope) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    tags: dict[str, str] = {}
    for entry in entries:
        path, parameters = openapi_path(entry.route.path, scope.fixed)
        item = paths.setdefault(path, {})
        for method in entry.route.methods:
            if method.lower() in item:  # the router answers the first declaration too
                continue
            item[method.lower()] = operation(entry, method, path, parameters, scope)
        tags.setdefault(tag_of(entry.dialect), entry.dialect.name)
    return {
        "openapi": OPENAPI_VERSION,
        "info": {"title": scope.title, "version": scope.version},
        "tags": [{"name": name, "description": f"the '{plugin}' dialect"} for name, plugin in tags.items()],
        "paths": paths,
    }


def tag_of(dialect: HttpDialect) -> str:
    return dialect.title or dialect.name


def operation(
    entry: Entry, method: str, path: str, parameters: list[dict[str, Any]], scope: Scope
) -> dict[str, Any]:
    route, doc = entry.route, entry.route.doc
    found: dict[str, Any] = {
        "operationId": _NOT_WORD.sub("_", f"{entry.dialect.name}.{method.lower()}.{path}").strip("_"),
        "tags": [tag_of(entry.dialect), *(doc.tags if doc else ())],
        "summary": (doc.summary if doc else "") or route.name or f"{method} {route.path}",
        "responses": {**responses(entry), "default": error_response(entry.dialect)},
    }
    if doc is not None and doc.description:
        found["description"] = doc.description
    query = [{"name": name, "in": "query", "required": False, "schema": dict(schema)}
             for name, schema in (doc.query.items() if doc else ())]  # fmt: skip
    if parameters or query:
        found["parameters"] = [*parameters, *query]
    body = request_schema(entry, scope)
    if body is not None and doc is not None and method not in ("GET", "HEAD"):
        found["requestBody"] = {"required": True, "content": {doc.request_type: {"schema": body}}}
    if route.category:
        found["x-api-category"] = route.category
    return found


def request_schema(entry: Entry, scope: Scope) -> Any:
    doc = entry.route.doc
    if doc is None:
        return None
    if scope.metadata is not None and doc.model_request is not None:
        return plain(doc.model_request(scope.metadata))
    return None if doc.request is None else plain(doc.request)


def responses(entry: Entry) -> dict[str, Any]:
    doc = entry.route.doc
    if doc is None or not doc.responses:
        return {"200": dict(_UNDOCUMENTED_OK)}
    described: dict[str, Any] = {}
    for status, schema in doc.responses.items():
        answer: dict[str, Any] = {"description": _phrase(status)}
        if schema is not None:
            answer["content"] = {doc.response_type: {"schema": plain(schema)}}
            answer["content"].update({kind: {} for kind in doc.other_types if 200 <= status < 300})
        described[str(status)] = answer
    return described


def error_response(dialect: HttpDialect) -> dict[str, Any]:
    """The dialect's error answer, in the content type its ``render_error`` really sends."""
    content_type = dialect.render_error("error", 400).content_type.partition(";")[0].strip()
    schema = plain(dialect.error_schema) if content_type.endswith("json") else {"type": "string"}
    return {"description": "An error, in the dialect's shape", "content": {content_type: {"schema": schema}}}


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return f"Status {status}"


def plain(value: Any) -> Any:
    """Mappings (read-only ones included) and tuples as plain dicts and lists, for JSON."""
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value
