"""structlog set-up: console output by default, JSON lines by setting.

Events are past-tense verbs with key/value context (``model_loaded``,
``request_failed``); tensor contents are never logged.
"""

from __future__ import annotations

import logging
import sys

import structlog


def configure(verbose: int = 0, fmt: str = "console") -> None:
    level = logging.DEBUG if verbose > 0 else logging.INFO
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
    # Sanic and grpc log through stdlib logging; keep their noise at our level.
    logging.basicConfig(level=logging.WARNING if verbose == 0 else logging.DEBUG, stream=sys.stderr)
