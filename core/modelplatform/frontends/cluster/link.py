"""A worker's questions to its siblings, asked through the supervisor.

The composition root creates the link first and hands it to the model
manager (as its replicator) and to the dataplane (as its siblings); the
:class:`~.member.Member` connects it once the server is up. Until then, and
after the member leaves, the link asks nobody and every call is a no-op.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import itertools
import shutil
import tempfile
from collections.abc import Callable
from multiprocessing.connection import Client, Connection
from pathlib import Path
from typing import Any, Literal

import structlog

from modelplatform.base.errors import InvalidArgument
from modelplatform.frontends.cluster.channel import Channel
from modelplatform.frontends.cluster.wire import (
    ClusterAddress,
    Hello,
    Message,
    ModelOperation,
    OperationRequest,
    OperationResult,
    Publication,
    StatisticsQuery,
    StatisticsResult,
)
from modelplatform.models import LoadOverride
from modelplatform.models.stats import ModelStats

log = structlog.get_logger("modelplatform.frontends.cluster")

#: How long a relayed model operation may take on the siblings.
OPERATION_TIMEOUT_S = 600.0
#: How long a worker waits for its siblings to apply a run-time setting.
PUBLICATION_TIMEOUT_S = 10.0
#: How long a worker waits for its siblings' statistics before answering its own.
STATISTICS_TIMEOUT_S = 10.0


class SiblingLink:
    """Relays this worker's model operations and statistics queries to its siblings."""

    def __init__(self, index: int, count: int) -> None:
        self.index = index
        self.count = count
        #: Request ids, unique across workers: each worker counts in its own range.
        self._ids = itertools.count(index * 1_000_000_000)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._channel: Channel | None = None

    async def connect(self, address: ClusterAddress, on_request: Callable[[Message], None]) -> None:
        """Join the supervisor; messages that are not answers to us go to ``on_request``."""
        connection = await asyncio.to_thread(_dial, address, self.index)
        self._channel = Channel(connection, functools.partial(self._received, on_request), self._disconnected)
        self._channel.start()

    def send(self, message: Message) -> None:
        if self._channel is not None:
            self._channel.send(message)

    def close(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            channel.close()

    async def replicate(
        self, operation: str, name: str, override: LoadOverride | None, copies: list[Path]
    ) -> None:
        """Apply ``operation`` on every sibling; raises if one of them failed."""
        if not self._asks_siblings():
            return
        kind: Literal["load", "unload"] = "load" if operation == "load" else "unload"
        targets: list[Path | None] = [*copies] or [None]
        overrides = [_for_sibling(override, copy) for copy in targets]
        op_id = next(self._ids)
        request = OperationRequest(op_id, tuple(ModelOperation(kind, name, o) for o in overrides))
        errors = await self._ask(op_id, request, OPERATION_TIMEOUT_S)
        if errors:
            failed = "; ".join(errors)
            raise InvalidArgument(f"{operation} of '{name}' failed on a sibling worker: {failed}")

    async def statistics(self, name: str, version: str, refused: bool = False) -> list[list[ModelStats]]:
        """Every sibling's own statistics for this query (DataPlane sums them)."""
        if not self._asks_siblings():
            return []
        query_id = next(self._ids)
        try:
            query = StatisticsQuery(query_id, name, version, refused)
            parts = await self._ask(query_id, query, STATISTICS_TIMEOUT_S)
        except TimeoutError:
            log.warning("sibling_statistics_timed_out", model=name, version=version)
            return []
        return [list(part) for part in parts]

    async def publish(self, topic: str, payload: object) -> tuple[str, ...]:
        """Have every sibling apply a run-time setting (broadcasting.py); their errors."""
        if not self._asks_siblings():
            return ()
        op_id = next(self._ids)
        try:
            return tuple(await self._ask(op_id, Publication(op_id, topic, payload), PUBLICATION_TIMEOUT_S))
        except TimeoutError:
            return (f"siblings did not answer within {PUBLICATION_TIMEOUT_S:g} s",)

    async def sibling_copies(self, override: LoadOverride) -> list[Path]:
        """One copy of an uploaded (temporary) model folder per sibling."""
        if not override.temporary or override.model_dir is None or self.count < 2:
            return []
        return await asyncio.to_thread(_copies, override.model_dir, self.count - 1)

    def _asks_siblings(self) -> bool:
        return self._channel is not None and self.count > 1

    async def _ask(self, request_id: int, request: Message, timeout: float) -> Any:
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = answer
        try:
            self.send(request)
            return await asyncio.wait_for(answer, timeout)
        finally:
            self._pending.pop(request_id, None)

    def _received(self, on_request: Callable[[Message], None], message: Message) -> None:
        match message:
            case OperationResult(request_id, result) | StatisticsResult(request_id, result):
                answer = self._pending.get(request_id)
                if answer is not None and not answer.done():
                    answer.set_result(result)
            case _:
                on_request(message)

    def _disconnected(self) -> None:
        self._channel = None


def _dial(address: ClusterAddress, index: int) -> Connection:
    """Connect, prove the authkey, and say which worker this is (blocking: run in a thread)."""
    connection = Client(address.path, "AF_UNIX", authkey=address.authkey)
    connection.send(Hello(index))
    return connection


def _for_sibling(override: LoadOverride | None, copy: Path | None) -> LoadOverride | None:
    """What a sibling loads: its own copy of an upload (to delete), else nothing to delete."""
    if override is None:
        return None
    if copy is not None:
        return dataclasses.replace(override, model_dir=copy, temporary=True)
    return dataclasses.replace(override, temporary=False)


def _copies(source: Path, count: int) -> list[Path]:
    copies = []
    for _ in range(count):
        target = Path(tempfile.mkdtemp(prefix="modelplatform-upload-")) / source.name
        shutil.copytree(source, target)
        copies.append(target)
    return copies
