"""Route templates (HttpRoute's syntax) as OpenAPI paths and path parameters.

``{name}`` is one segment, ``{name:int}`` digits, ``{name:path}`` the rest of the
path, ``{name:<regex>}`` a segment part matching the regular expression (the
syntax the core's router reads: ``modelplatform.HttpRoute``). OpenAPI names
every parameter ``{name}``; what the kind allows becomes the parameter's schema.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

_PARAMETER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::((?:[^{}]|\{[^{}]*\})+))?\}")


def parameter_names(template: str) -> list[str]:
    return [found.group(1) for found in _PARAMETER.finditer(template)]


def openapi_path(template: str, fixed: Mapping[str, str]) -> tuple[str, list[dict[str, Any]]]:
    """(the OpenAPI path, its path parameters); ``fixed`` parameters are written in, quoted."""
    parts: list[str] = []
    parameters: list[dict[str, Any]] = []
    last = 0
    for found in _PARAMETER.finditer(template):
        name, kind = found.group(1), found.group(2)
        parts.append(template[last : found.start()])
        if name in fixed:
            parts.append(quote(fixed[name], safe=""))
        else:
            parts.append("{" + name + "}")
            parameters.append({"name": name, "in": "path", "required": True, "schema": _schema(kind)})
        last = found.end()
    parts.append(template[last:])
    return "".join(parts), parameters


def _schema(kind: str | None) -> dict[str, Any]:
    if kind == "int":
        return {"type": "string", "pattern": "^[0-9]+$"}
    if kind is None or kind == "path":
        return {"type": "string", "minLength": 1}
    return {"type": "string", "pattern": f"^(?:{kind})$"}


_KINDS = {None: "[^/]+", "int": "[0-9]+", "path": ".+"}


def matches(template: str, path: str) -> bool:
    """Whether a route of ``template`` would answer ``path`` (a document path must not be taken)."""
    parts, last = [], 0
    for found in _PARAMETER.finditer(template):
        parts.append(re.escape(template[last : found.start()]))
        parts.append(f"(?:{_KINDS.get(found.group(2), found.group(2))})")
        last = found.end()
    parts.append(re.escape(template[last:]))
    return re.fullmatch("".join(parts), path) is not None
