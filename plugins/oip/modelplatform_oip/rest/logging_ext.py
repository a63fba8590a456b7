"""Triton's logging extension on HTTP: ``GET``/``POST /v2/logging`` read and change the
server's log settings while it runs (``log_verbose_level`` > 0 writes debug events).

A change applies on every ``--workers`` sibling before the answer (ServerContext.broadcast).
"""

from __future__ import annotations

import orjson

from modelplatform import (
    LOG_SETTINGS_TOPIC,
    Broadcast,
    HttpReply,
    HttpRequest,
    HttpRoute,
    InvalidArgument,
    RouteDoc,
    log_settings,
    update_log_settings,
)

PATH = "/v2/logging"
#: A settings document is a handful of fields; anything larger is not one.
MAX_BODY_BYTES = 16 * 1024


async def get_logging(request: HttpRequest) -> HttpReply:
    return HttpReply(200, orjson.dumps(log_settings()))


class LoggingChanges:
    def __init__(self, broadcast: Broadcast) -> None:
        self.broadcast = broadcast

    async def post(self, request: HttpRequest) -> HttpReply:
        try:
            changes = orjson.loads(request.body)
        except orjson.JSONDecodeError as error:
            raise InvalidArgument(f"failed to parse the logging settings: {error}") from None
        if not isinstance(changes, dict):
            raise InvalidArgument("logging settings must be a JSON object")
        now = update_log_settings(changes)  # refuses a bad document before anyone else sees it
        await self.broadcast.publish(LOG_SETTINGS_TOPIC, changes)
        return HttpReply(200, orjson.dumps(now))


#: Triton's logging settings document (every field optional in a change).
SETTINGS_SCHEMA = {"type": "object", "properties": {
    "log_file": {"type": "string"}, "log_info": {"type": "boolean"}, "log_warning": {"type": "boolean"},
    "log_error": {"type": "boolean"}, "log_verbose_level": {"type": "integer", "minimum": 0},
    "log_format": {"type": "string"}}}  # fmt: skip
_READ = RouteDoc(summary="The log settings", responses={200: SETTINGS_SCHEMA})
_CHANGE = RouteDoc(
    summary="Change the log settings", request=SETTINGS_SCHEMA, responses={200: SETTINGS_SCHEMA}
)


def logging_routes(broadcast: Broadcast) -> list[HttpRoute]:
    return [
        HttpRoute(("GET",), PATH, get_logging, max_body_bytes=0, category="logging", doc=_READ),
        HttpRoute(("POST",), PATH, LoggingChanges(broadcast).post, max_body_bytes=MAX_BODY_BYTES,
                  category="logging", doc=_CHANGE),
    ]  # fmt: skip
