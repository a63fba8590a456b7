"""The one router: every dialect's declared routes, matched the same way on both paths.

Built once at start-up. A path is matched on its raw (percent-encoded) form:
first routes without parameters (a dict lookup), then routes with segment
parameters of the same segment count, then ``{name:path}`` routes, each group
in declaration order. A miss with a trailing slash is retried without it
(Sanic's default, which clients rely on). Parameters are percent-decoded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from urllib.parse import unquote

from modelplatform.base.access.categories import check_category
from modelplatform.base.errors import PluginError
from modelplatform.dataplane.declarations import HttpDialect, HttpRoute

_PARAMETER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::((?:[^{}]|\{[^{}]*\})+))?\}")
_KINDS = {None: "[^/]+", "int": "[0-9]+", "path": ".+"}
_NO_PARAMS: Mapping[str, str] = MappingProxyType({})
#: How many matched hot paths the router remembers before it starts over.
_SEEN_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class Match:
    """A matched route, its dialect, and the decoded path parameters."""

    route: HttpRoute
    dialect: HttpDialect
    #: Read-only: a remembered match is shared by every request on its path.
    params: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class _Compiled:
    route: HttpRoute
    dialect: HttpDialect
    pattern: re.Pattern[str]
    ints: tuple[str, ...]

    def bind(self, path: str) -> dict[str, str] | None:
        found = self.pattern.fullmatch(path)
        if found is None:
            return None
        params = {
            name: unquote(value) if "%" in value else value for name, value in found.groupdict().items()
        }
        for name in self.ints:  # not int(): a path of 5,000 digits must not raise
            params[name] = params[name].lstrip("0") or "0"
        return params


def compile_template(template: str, ignore_case: bool = False) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """The template as a regular expression, and the names of its ``int`` parameters."""
    parts, ints, last = [], [], 0
    for found in _PARAMETER.finditer(template):
        name, kind = found.group(1), found.group(2)
        parts.append(re.escape(template[last : found.start()]))
        parts.append(f"(?P<{name}>{_KINDS.get(kind, kind)})")
        if kind == "int":
            ints.append(name)
        last = found.end()
    parts.append(re.escape(template[last:]))
    return re.compile("".join(parts), re.IGNORECASE if ignore_case else 0), tuple(ints)


def _is_static(route: HttpRoute) -> bool:
    return "{" not in route.path


class Router:
    """Finds the route of a request; answers ``None`` (404) or the allowed methods (405)."""

    def __init__(self, dialects: Iterable[HttpDialect], routes: Mapping[str, Sequence[HttpRoute]]) -> None:
        self._static: dict[tuple[str, str], tuple[HttpRoute, HttpDialect]] = {}
        self._static_folded: dict[tuple[str, str], tuple[HttpRoute, HttpDialect]] = {}
        self._by_segments: dict[tuple[str, int], list[_Compiled]] = {}
        self._rest: dict[str, list[_Compiled]] = {}
        self._all: list[_Compiled] = []
        self._seen: dict[tuple[str, str], Match] = {}
        for dialect in dialects:
            for route in routes.get(dialect.name, ()):
                self._add(route, dialect)
        self._refuse_shadowing()

    def routes(self) -> list[HttpRoute]:
        return [compiled.route for compiled in self._all]

    def match(self, method: str, path: str) -> Match | None:
        found = self._seen.get((method, path))
        if found is not None:
            return found
        found = self._match(method, path)
        if found is None and len(path) > 1 and path.endswith("/"):
            found = self._match(method, path[:-1])
        if found is not None:
            self._remember(method, path, found)
        return found

    def _remember(self, method: str, path: str, found: Match) -> None:
        """Matches of hot routes are kept: a model's infer path repeats, its regex need not run."""
        if not found.route.hot:
            return
        if len(self._seen) >= _SEEN_LIMIT:  # paths are the client's: bound what they cost
            self._seen.clear()
        self._seen[(method, path)] = found

    def allowed_methods(self, path: str) -> list[str]:
        """The methods some route accepts for ``path`` (empty: no such path)."""
        methods = {
            m for compiled in self._all for m in compiled.route.methods if compiled.bind(path) is not None
        }
        if not methods and len(path) > 1 and path.endswith("/"):
            return self.allowed_methods(path[:-1])
        return sorted(methods)

    def _match(self, method: str, path: str) -> Match | None:
        static = self._static.get((method, path)) or self._static_folded.get((method, path.lower()))
        if static is not None:
            return Match(static[0], static[1], _NO_PARAMS)
        candidates = self._by_segments.get((method, path.count("/")), ())
        for compiled in (*candidates, *self._rest.get(method, ())):
            params = compiled.bind(path)
            if params is not None:
                return Match(compiled.route, compiled.dialect, MappingProxyType(params))
        return None

    def _add(self, route: HttpRoute, dialect: HttpDialect) -> None:
        check_category(route.category, f"HTTP route {route.describe()} of '{dialect.name}'")
        pattern, ints = compile_template(route.path, route.ignore_case)
        compiled = _Compiled(route, dialect, pattern, ints)
        self._all.append(compiled)
        for method in route.methods:
            if _is_static(route):
                self._add_static(method, route, dialect)
            elif ":path}" in route.path:
                self._rest.setdefault(method, []).append(compiled)
            else:
                slashes = _PARAMETER.sub("", route.path).count("/")  # a parameter's regex may hold "/"
                self._by_segments.setdefault((method, slashes), []).append(compiled)

    def _add_static(self, method: str, route: HttpRoute, dialect: HttpDialect) -> None:
        table = self._static_folded if route.ignore_case else self._static
        key = (method, route.path.lower() if route.ignore_case else route.path)
        if key in table:
            other, owner = table[key]
            raise PluginError(
                f"HTTP route {method} {route.describe()} of '{dialect.name}' collides with "
                f"{other.describe()} of '{owner.name}'"
            )
        table[key] = (route, dialect)

    def _refuse_shadowing(self) -> None:
        """A route without parameters must not hide another dialect's route for the same path."""
        for (method, path), (route, dialect) in (*self._static.items(), *self._static_folded.items()):
            for compiled in self._all:
                if compiled.dialect is dialect or method not in compiled.route.methods:
                    continue
                if compiled.route is not route and compiled.bind(path) is not None:
                    raise PluginError(
                        f"HTTP route {method} {route.describe()} of '{dialect.name}' collides with "
                        f"{compiled.route.describe()} of '{compiled.dialect.name}'"
                    )
