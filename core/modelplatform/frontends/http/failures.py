"""Errors to replies: one renderer per dialect, the same on Sanic and on the fast lane.

A route's errors are its dialect's: a platform error gets the dialect's
status and shape; anything else is logged and answered 500 in that shape.
Errors before any route matched (404, 405, 413, a malformed request) take the
shape of the dialect owning the path prefix, else Triton's ``{"error": ...}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import structlog

from modelplatform.base.errors import ModelPlatformError, PayloadTooLarge
from modelplatform.dataplane.declarations import HttpDialect, HttpReply, json_error

log = structlog.get_logger("modelplatform.frontends.http")


def route_failure(dialect: HttpDialect, error: Exception, path: str, params: Mapping[str, str]) -> HttpReply:
    """The reply for an exception raised by one of ``dialect``'s handlers."""
    if isinstance(error, ModelPlatformError):
        if not error.logged:  # refused at the edge, before the dataplane saw (and logged) it
            log.info("request_failed", model=params.get("model", ""), path=path,
                     code=error.code.value, error=error.message)  # fmt: skip
            error.logged = True
        # A body over its limit is HTTP's 413 in every dialect, whatever else RESOURCE_EXHAUSTED maps to.
        status = 413 if isinstance(error, PayloadTooLarge) else dialect.error_status(error)
        return dialect.render_error(error.message, status)
    log.error("request_failed", path=path, error=type(error).__name__)
    return dialect.render_error(f"internal error: {type(error).__name__}", 500)


class PathOwners:
    """Which dialect renders the errors raised before a route matched, by path prefix."""

    def __init__(self, dialects: Iterable[HttpDialect]) -> None:
        owned = [d for d in dialects if d.path_prefix]
        self._owners = sorted(owned, key=lambda dialect: -len(dialect.path_prefix))

    def render(self, path: str, message: str, status: int) -> HttpReply:
        for dialect in self._owners:
            if path.startswith(dialect.path_prefix):
                return dialect.render_error(message, status)
        return json_error(message, status)
