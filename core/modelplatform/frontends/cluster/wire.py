"""What the supervisor and its workers say to each other: one frozen dataclass per message.

Messages hold plain values only (model names, ids, a :class:`LoadOverride`
of plain values, statistics counters), so they pickle across the
authenticated connection (channel.py) without anything process-bound. Ids
are chosen by the asking worker and unique across workers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from modelplatform.models import LoadOverride
from modelplatform.models.stats import ModelStats


@dataclass(frozen=True, slots=True)
class ClusterAddress:
    """Where workers reach the supervisor, and the key that proves they are its workers.

    Handed to each worker in its spawn arguments (a private pipe), never through
    the environment, the command line or a file.
    """

    path: str
    authkey: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class ModelOperation:
    """A load or unload for one sibling to apply (``override`` already holds its own copy)."""

    kind: Literal["load", "unload"]
    name: str
    override: LoadOverride | None = None


# ---- worker -> supervisor


@dataclass(frozen=True, slots=True)
class Hello:
    """The first message of a worker: which one it is."""

    index: int


@dataclass(frozen=True, slots=True)
class Readiness:
    """The worker's own readiness changed."""

    ready: bool


@dataclass(frozen=True, slots=True)
class OperationRequest:
    """Apply an operation on every sibling, handing out ``operations`` one per sibling in turn."""

    op_id: int
    operations: tuple[ModelOperation, ...]


@dataclass(frozen=True, slots=True)
class Applied:
    """A sibling applied (or failed to apply) a relayed operation."""

    op_id: int
    error: str | None


@dataclass(frozen=True, slots=True)
class StatisticsAnswer:
    """A sibling's own counters for a relayed statistics query."""

    query_id: int
    stats: tuple[ModelStats, ...]


# ---- supervisor -> worker


@dataclass(frozen=True, slots=True)
class ClusterReadiness:
    """Whether every worker is ready (a worker shows not-ready until they all are)."""

    ready: bool


@dataclass(frozen=True, slots=True)
class Apply:
    """Apply a sibling's operation here."""

    op_id: int
    operation: ModelOperation


@dataclass(frozen=True, slots=True)
class OperationResult:
    """Every sibling has answered an operation request; what failed where."""

    op_id: int
    errors: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StatisticsResult:
    """Every sibling's counters for a statistics query."""

    query_id: int
    parts: tuple[tuple[ModelStats, ...], ...]


# ---- both ways: a worker asks, the supervisor passes the question on


@dataclass(frozen=True, slots=True)
class Publication:
    """A run-time setting to apply on every sibling (broadcasting.py); answered by Applied."""

    op_id: int
    topic: str
    #: Plain values only: it is pickled across the connection.
    payload: object


@dataclass(frozen=True, slots=True)
class StatisticsQuery:
    query_id: int
    name: str
    version: str
    #: Also the requests refused before any version took them (what the metrics show).
    refused: bool = False


Message = (
    Hello
    | Readiness
    | OperationRequest
    | Applied
    | StatisticsAnswer
    | ClusterReadiness
    | Apply
    | OperationResult
    | StatisticsResult
    | StatisticsQuery
    | Publication
)
