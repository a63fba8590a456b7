"""Restricted APIs and API keys on the HTTP port: asked once per request, on both paths.

The Sanic dispatcher and the fast lane ask :meth:`HttpAccess.admit` after
the route matched and before its body is read or its handler runs; a refusal
is answered in the route's dialect's error shape (OIP: Triton's
``{"error": "This API is restricted, expecting header '<key>'"}``, 403).
A refusal is no request of the model: it is logged, not counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import structlog

from modelplatform.base.access.categories import INFERENCE
from modelplatform.dataplane.declarations import HttpReply, HttpRoute
from modelplatform.frontends.gate import ALLOWED, AccessGate, Denial, Verdict, admitted
from modelplatform.frontends.http.routing import Match

log = structlog.get_logger("modelplatform.base.access")

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="modelplatform"'}


class HttpAccess:
    """The server's gate, as the HTTP front end asks it."""

    def __init__(self, gate: AccessGate) -> None:
        self.gate = gate
        #: False when nothing is restricted and no key file is set: the paths skip admit().
        self.active = gate.http_active

    def admit(self, match: Match, headers: Mapping[str, str]) -> tuple[HttpReply | None, Verdict]:
        """(the refusal to answer, or None; the verdict, for :func:`admitted` around the handler)."""
        route = match.route
        verdict = self.gate.check_http(route.category, model_named(route, match.params), headers)
        if verdict.denial is None:
            return None, verdict
        return _refusal(match, verdict.denial), verdict


def model_named(route: HttpRoute, params: Mapping[str, str]) -> str | None:
    """The model a request of ``route`` names: its model path parameter; "" when the
    model is in the body (or an inference route does not say: the handler's first
    DataPlane call checks it, access/scope.py); None: it names none."""
    if route.model_param == "":
        return ""
    name = params.get(route.model_param or "model")
    if name is not None:
        return name
    return "" if route.category == INFERENCE else None


def _refusal(match: Match, denial: Denial) -> HttpReply:
    status = denial.http_status
    log.info("request_refused", dialect=match.dialect.name, category=match.route.category,
             reason=denial.kind.value, api_key=denial.key_name or None)  # fmt: skip
    reply = match.dialect.render_error(denial.message, status)
    if status == 401:
        reply = replace(reply, headers={**reply.headers, **_CHALLENGE})
    return reply


__all__ = ["ALLOWED", "HttpAccess", "admitted", "model_named"]
