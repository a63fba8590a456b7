"""CORS on the HTTP port: preflights answered, allowed origins told so on every answer.

Off unless ``--cors-allow-origin`` names origins. Then, on both paths (the
fast lane and Sanic) and for every dialect alike:

- a preflight (``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method``)
  is answered here, before routing and access checks (a browser sends no
  credentials with it): 200, empty, with the allowed method and headers when the origin is
  allowed, the path has a route for the method, and every requested header is
  allowed; otherwise 403 with no CORS header, which the browser reports as blocked;
- any other answer to a request from an allowed origin carries
  ``Access-Control-Allow-Origin`` (``*`` when any origin is allowed and
  credentials are not; else the origin itself, with ``Vary: Origin``),
  ``Access-Control-Expose-Headers`` and, with credentials allowed,
  ``Access-Control-Allow-Credentials: true`` (the Fetch standard's rules).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from modelplatform.base.cors_settings import ANY
from modelplatform.dataplane.declarations import HttpReply

if TYPE_CHECKING:
    from modelplatform.base.settings import Settings

_PLAIN = "text/plain; charset=utf-8"


class Cors:
    """One server's CORS answers, built once from its settings."""

    __slots__ = ("_origins", "_any", "_credentials", "_methods", "_headers", "_any_header", "_common",
                 "_max_age", "_allowed_methods")  # fmt: skip

    def __init__(self, settings: Settings, allowed_methods: Callable[[str], list[str]]) -> None:
        self._origins = frozenset(origin.lower() for origin in settings.cors_allow_origin)
        self._any = ANY in self._origins
        self._credentials = settings.cors_allow_credentials
        self._methods = frozenset(method.upper() for method in settings.cors_allow_methods)
        self._headers = frozenset(header.lower() for header in settings.cors_allow_headers)
        self._any_header = ANY in self._headers
        self._max_age = str(settings.cors_max_age_secs)
        #: (path) -> the methods its routes accept (the router's).
        self._allowed_methods = allowed_methods
        common = {"access-control-expose-headers": ", ".join(settings.cors_expose_headers)}
        if self._credentials:
            common["access-control-allow-credentials"] = "true"
        self._common = {name: value for name, value in common.items() if value}

    @classmethod
    def of(cls, settings: Settings, allowed_methods: Callable[[str], list[str]]) -> Cors | None:
        return cls(settings, allowed_methods) if settings.cors_allow_origin else None

    def allows(self, origin: str) -> bool:
        return self._any or origin.lower() in self._origins

    def preflight(self, method: str, path: str, headers: Mapping[str, str]) -> HttpReply | None:
        """The answer to a preflight; None when the request is none."""
        if method != "OPTIONS":
            return None
        origin, wanted = headers.get("origin"), headers.get("access-control-request-method")
        if not origin or not wanted:
            return None
        asked = [
            h.strip().lower()
            for h in headers.get("access-control-request-headers", "").split(",")
            if h.strip()
        ]
        methods = self._allowed_methods(path)
        if not (self.allows(origin) and wanted in methods and self._method_allowed(wanted)
                and (self._any_header or all(h in self._headers for h in asked))):  # fmt: skip
            return HttpReply(403, b"", _PLAIN, {"vary": "Origin"})
        allowed = {
            **self._origin_headers(origin),
            "access-control-allow-methods": ", ".join(m for m in methods if self._method_allowed(m)),
            "access-control-max-age": self._max_age,
        }
        if asked:  # echoing covers "*" with credentials too, where Fetch reads "*" literally
            allowed["access-control-allow-headers"] = ", ".join(asked)
        return HttpReply(200, b"", _PLAIN, allowed)  # not 204: the fast lane always frames a length

    def answered(self, reply: HttpReply, headers: Mapping[str, str]) -> HttpReply:
        """``reply`` with the CORS headers its request's origin gets (none when not allowed)."""
        origin = headers.get("origin")
        if not origin or not self.allows(origin):
            return reply
        return replace(reply, headers={**reply.headers, **self._origin_headers(origin), **self._common})

    def _method_allowed(self, method: str) -> bool:
        return not self._methods or method in self._methods

    def _origin_headers(self, origin: str) -> dict[str, str]:
        if self._any and not self._credentials:
            return {"access-control-allow-origin": "*"}
        headers = {"access-control-allow-origin": origin, "vary": "Origin"}
        if self._credentials:
            headers["access-control-allow-credentials"] = "true"
        return headers
