"""structlog set-up: console output by default, JSON lines by setting.

Events are past-tense verbs with key/value context (``model_loaded``,
``request_failed``); tensor contents are never logged.

Which levels are written can change while the server runs (Triton's logging
extension, ``/v2/logging``): a processor reads the live :class:`LogSettings`
on every event, so loggers already bound (and cached) follow a change at once.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import structlog

from modelplatform.base.errors import InvalidArgument

#: Triton's ``log_format`` values; the renderer (console or JSON) stays as started.
LOG_FORMATS = ("default", "ISO8601")


@dataclass(slots=True)
class LogSettings:
    """Triton's logging-extension fields, as they are now."""

    log_file: str = ""
    log_info: bool = True
    log_warning: bool = True
    log_error: bool = True
    log_verbose_level: int = 0
    log_format: str = "default"


_settings = LogSettings()
#: The ServerContext.broadcast topic on which a change of these settings reaches every worker.
LOG_SETTINGS_TOPIC = "logging"
#: Each field's JSON type, from its default.
_TYPES: dict[str, type[Any]] = {f.name: type(f.default) for f in fields(LogSettings)}


def log_settings() -> dict[str, Any]:
    """The logging settings now, in Triton's field names."""
    return asdict(_settings)


def update_log_settings(changes: Mapping[str, Any]) -> dict[str, Any]:
    """Apply some of Triton's logging fields (all checked first); returns the settings now.

    ``log_verbose_level`` above 0 writes debug events; ``log_info``,
    ``log_warning`` and ``log_error`` switch their levels. The log file cannot
    change while running (the server logs to stderr): any ``log_file`` but ""
    is refused.
    """
    checked = {name: _checked(name, value) for name, value in changes.items()}
    for name, value in checked.items():
        setattr(_settings, name, value)
    logging.getLogger().setLevel(logging.DEBUG if _settings.log_verbose_level > 0 else logging.WARNING)
    return log_settings()


def _checked(name: str, value: Any) -> Any:
    kind = _TYPES.get(name)
    if kind is None:
        raise InvalidArgument(f"logging setting '{name}' is unknown (known: {', '.join(_TYPES)})")
    # bool is an int in Python: a verbose level must be a number, a switch must be a bool.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InvalidArgument(f"logging setting '{name}' must be {_KIND_NAMES[kind]}")
    if name == "log_verbose_level" and not 0 <= value <= 2**31 - 1:
        raise InvalidArgument("logging setting 'log_verbose_level' must be 0 or more")
    if name == "log_file" and value:
        raise InvalidArgument("logging setting 'log_file' cannot change while running (logs go to stderr)")
    if name == "log_format" and value not in LOG_FORMATS:
        raise InvalidArgument(f"logging setting 'log_format' must be one of {', '.join(LOG_FORMATS)}")
    return value


_KIND_NAMES = {int: "a number", bool: "true or false", str: "a string"}


def _drop_switched_off(logger: Any, method_name: str, event_dict: Any) -> Any:
    """Drops events of levels the live settings switch off (first in the chain: cheap)."""
    settings = _settings
    if method_name == "debug":
        keep = settings.log_verbose_level > 0
    elif method_name == "info":
        keep = settings.log_info
    elif method_name in ("warning", "warn"):
        keep = settings.log_warning
    elif method_name in ("error", "exception", "critical", "fatal"):
        keep = settings.log_error
    else:
        keep = True
    if not keep:
        raise structlog.DropEvent
    return event_dict


def configure(verbose: int = 0, fmt: str = "console") -> None:
    _settings.log_verbose_level = max(0, verbose)
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            _drop_switched_off,
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        # Every level reaches the processors, which filter by the live settings.
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
        # One write per event, newline included: workers share the supervisor's
        # stderr, and print()'s separate newline write let their lines run together.
        logger_factory=structlog.WriteLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
    # Sanic and grpc log through stdlib logging; keep their noise at our level.
    logging.basicConfig(level=logging.WARNING if verbose == 0 else logging.DEBUG, stream=sys.stderr)
