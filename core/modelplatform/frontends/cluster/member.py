"""A worker's part in the cluster: what it does when its siblings ask, and its readiness.

The member applies the model operations its siblings relay (without relaying
them again), answers their statistics queries with this worker's own
counters, applies the run-time settings they publish, reports this worker's readiness whenever it changes, and keeps the
server not-ready (a drain reason) until the supervisor says every worker is.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

import structlog

from modelplatform.base.errors import ModelPlatformError
from modelplatform.dataplane.health import Health
from modelplatform.frontends.cluster.link import SiblingLink
from modelplatform.frontends.cluster.wire import (
    Applied,
    Apply,
    ClusterAddress,
    ClusterReadiness,
    Message,
    ModelOperation,
    Publication,
    Readiness,
    StatisticsAnswer,
    StatisticsQuery,
)
from modelplatform.models import ModelManager
from modelplatform.models.stats import ModelStats

log = structlog.get_logger("modelplatform.frontends.cluster")

#: The drain reason a worker shows while a sibling is not ready.
WAITING = "waiting for every worker to be ready"
#: How often a worker looks at its own readiness.
READINESS_EVERY_S = 0.05

#: (name, version, refused) -> this worker's counters (Observation.local_statistics).
LocalStatistics = Callable[[str, str, bool], list[ModelStats]]
#: (topic, payload) -> the error text, or None once applied (Broadcast.deliver).
Deliver = Callable[[str, object], "str | None"]


class Member:
    """Joins the cluster through ``link`` and serves the siblings' requests."""

    def __init__(
        self,
        link: SiblingLink,
        models: ModelManager,
        local_ready: Callable[[], bool],
        readiness: Health,
        local_statistics: LocalStatistics | None = None,
        deliver: Deliver | None = None,
    ) -> None:
        self._link = link
        self._models = models
        self._local_ready = local_ready
        self._readiness = readiness
        self._local_statistics = local_statistics
        self._deliver = deliver
        self._tasks: set[asyncio.Task[None]] = set()

    async def join(self, address: ClusterAddress) -> None:
        self._readiness.hold_readiness(WAITING)
        await self._link.connect(address, self._handle)
        self._spawn(self._watch_readiness())

    async def leave(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._link.close()

    def _handle(self, message: Message) -> None:
        match message:
            case ClusterReadiness(ready):
                (self._readiness.release_readiness if ready else self._readiness.hold_readiness)(WAITING)
            case Apply(op_id, operation):
                self._spawn(self._apply(op_id, operation))
            case StatisticsQuery(query_id, name, version, refused):
                answer = tuple(self._statistics(name, version, refused))
                self._link.send(StatisticsAnswer(query_id, answer))
            case Publication(op_id, topic, payload):
                error = self._deliver(topic, payload) if self._deliver else "settings not shared here"
                self._link.send(Applied(op_id, error))
            case _:
                log.warning("cluster_message_ignored", kind=type(message).__name__)

    def _statistics(self, name: str, version: str, refused: bool) -> list[ModelStats]:
        if self._local_statistics is None:
            return []
        with contextlib.suppress(ModelPlatformError):  # not loaded here: nothing to add
            return self._local_statistics(name, version, refused)
        return []

    async def _apply(self, op_id: int, operation: ModelOperation) -> None:
        error: str | None = None
        try:
            if operation.kind == "load":
                await self._models.load(operation.name, operation.override, replicate=False)
            else:
                await self._models.unload(operation.name, replicate=False)
        except ModelPlatformError as failure:
            error = failure.message
        except Exception as failure:  # noqa: BLE001 - reported to the origin, never lost
            error = f"{type(failure).__name__}: {failure}"
        log.info("model_operation_relayed", operation=operation.kind, model=operation.name, error=error)
        self._link.send(Applied(op_id, error))

    async def _watch_readiness(self) -> None:
        reported: bool | None = None
        while True:
            ready = self._local_ready()
            if ready != reported:
                self._link.send(Readiness(ready))
                reported = ready
            await asyncio.sleep(READINESS_EVERY_S)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
