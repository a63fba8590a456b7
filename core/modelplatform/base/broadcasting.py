"""Run-time settings that every worker of ``--workers N`` shares, changed through any one of them.

A client that changes the log level (Triton's logging extension) or the
trace settings reaches one worker; without this the other workers would keep
the old values and the answer would depend on which connection the client
happened to hold. A plugin subscribes an *applier* per topic at start-up;
the worker that took the change applies it itself, then publishes it, and
every sibling applies the same plain-valued payload before the publisher
answers its client. Without siblings publishing costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import structlog

log = structlog.get_logger("modelplatform.broadcast")

#: Applies a payload published by a sibling; raises to report a failure.
Applier = Callable[[Any], object]


class Publisher(Protocol):
    """What carries a payload to the siblings (cluster.SiblingLink): answers their errors."""

    async def publish(self, topic: str, payload: Any) -> tuple[str, ...]: ...


class Broadcast:
    """One per server; handed to plugins as ``ServerContext.broadcast``."""

    def __init__(self, siblings: Publisher | None = None) -> None:
        self._siblings = siblings
        self._appliers: dict[str, Applier] = {}

    def subscribe(self, topic: str, apply: Applier) -> None:
        """``apply(payload)`` runs here whenever a sibling publishes on ``topic``."""
        self._appliers[topic] = apply

    async def publish(self, topic: str, payload: Any) -> None:
        """Apply ``payload`` on every sibling (already applied here); failures are logged.

        ``payload`` must be plain values (str, numbers, lists, dicts): it is pickled
        across processes. A sibling that fails keeps its old setting; the change
        stands on the others, so the failure is logged rather than raised.
        """
        if self._siblings is None:
            return
        errors = await self._siblings.publish(topic, payload)
        for error in errors:
            log.warning("setting_not_applied_on_sibling", topic=topic, error=error)

    def deliver(self, topic: str, payload: Any) -> str | None:
        """Apply a sibling's publication here; the error text, or None when applied."""
        apply = self._appliers.get(topic)
        if apply is None:
            return f"no subscriber for '{topic}'"
        try:
            apply(payload)
        except Exception as failure:  # noqa: BLE001 - reported to the publisher, never lost
            return f"{type(failure).__name__}: {failure}"
        log.info("setting_applied_from_sibling", topic=topic)
        return None
