"""The supervisor's switchboard: passes model operations, statistics queries and
run-time settings (publications) between
workers, gathers their answers for the asking worker, and aggregates readiness.

Runs on the supervisor's event loop only (channels call it there), so it
needs no locks; sending never blocks (channel.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from modelplatform.frontends.cluster.channel import Channel
from modelplatform.frontends.cluster.wire import (
    Applied,
    Apply,
    ClusterReadiness,
    Message,
    ModelOperation,
    OperationRequest,
    OperationResult,
    Publication,
    Readiness,
    StatisticsAnswer,
    StatisticsQuery,
    StatisticsResult,
)

log = structlog.get_logger("modelplatform.frontends.cluster")


@dataclass(eq=False)
class _Gathering:
    """Answers awaited from siblings for one worker's request."""

    origin: int
    waiting: set[int]
    #: The message that answers the origin, from what was gathered.
    reply: Callable[[tuple[Any, ...]], Message]
    #: What a sibling that goes away contributes (an error, or nothing).
    gone: Callable[[int], Any]
    gathered: list[Any] = field(default_factory=list)


class Relay:
    def __init__(self, count: int) -> None:
        self.count = count
        self._channels: dict[int, Channel] = {}
        self._ready: dict[int, bool] = {}
        self._all_ready = False
        self._gatherings: dict[int, _Gathering] = {}

    def joined(self, index: int, channel: Channel) -> None:
        self._channels[index] = channel

    def left(self, index: int) -> None:
        """A worker went away: it is not ready, and answers nothing more."""
        self._channels.pop(index, None)
        self._ready.pop(index, None)
        self._publish_readiness()
        for request_id, gathering in list(self._gatherings.items()):
            if index in gathering.waiting:
                self._answered(request_id, index, gathering.gone(index))

    def received(self, index: int, message: Message) -> None:
        match message:
            case Readiness(ready):
                self._ready[index] = ready
                self._publish_readiness()
            case OperationRequest(op_id, operations):
                self._relay(index, op_id, operations)
            case Applied(op_id, error):
                self._answered(op_id, index, f"worker {index}: {error}" if error else None)
            case StatisticsQuery(query_id):
                self._ask(index, query_id, message)
            case Publication(op_id):
                self._publish(index, op_id, message)
            case StatisticsAnswer(query_id, stats):
                self._answered(query_id, index, stats or None)
            case _:
                log.warning("cluster_message_ignored", worker=index, kind=type(message).__name__)

    def _publish_readiness(self) -> None:
        ready = len(self._ready) == self.count and all(self._ready.values())
        if ready == self._all_ready:
            return
        self._all_ready = ready
        log.info("workers_readiness_changed", ready=ready)
        for channel in self._channels.values():
            channel.send(ClusterReadiness(ready))

    def _relay(self, origin: int, op_id: int, operations: tuple[ModelOperation, ...]) -> None:
        """Each sibling applies one of ``operations`` (its own copy of an upload), in turn."""
        siblings = self._gather(
            op_id,
            origin,
            reply=lambda errors: OperationResult(op_id, errors),
            gone=lambda index: f"worker {index}: worker {index} went away",
        )
        for sibling, operation in zip(siblings, itertools.cycle(operations)):
            self._channels[sibling].send(Apply(op_id, operation))

    def _publish(self, origin: int, op_id: int, publication: Publication) -> None:
        siblings = self._gather(
            op_id,
            origin,
            reply=lambda errors: OperationResult(op_id, errors),
            gone=lambda index: None,  # a worker that went away holds no settings to update
        )
        for sibling in siblings:
            self._channels[sibling].send(publication)

    def _ask(self, origin: int, query_id: int, query: StatisticsQuery) -> None:
        siblings = self._gather(
            query_id,
            origin,
            reply=lambda parts: StatisticsResult(query_id, parts),
            gone=lambda index: None,
        )
        for sibling in siblings:
            self._channels[sibling].send(query)

    def _gather(
        self,
        request_id: int,
        origin: int,
        reply: Callable[[tuple[Any, ...]], Message],
        gone: Callable[[int], Any],
    ) -> list[int]:
        """Await every sibling's answer to ``request_id``; returns the siblings to ask."""
        siblings = [i for i in sorted(self._channels) if i != origin]
        self._gatherings[request_id] = _Gathering(origin, set(siblings), reply, gone)
        if not siblings:
            self._answered(request_id, origin, None)
        return siblings

    def _answered(self, request_id: int, index: int, answer: Any) -> None:
        """One sibling's answer (None: nothing to add); the origin hears once all have answered."""
        gathering = self._gatherings.get(request_id)
        if gathering is None:
            return
        gathering.waiting.discard(index)
        if answer is not None:
            gathering.gathered.append(answer)
        if gathering.waiting:
            return
        del self._gatherings[request_id]
        origin = self._channels.get(gathering.origin)
        if origin is not None:
            origin.send(gathering.reply(tuple(gathering.gathered)))
