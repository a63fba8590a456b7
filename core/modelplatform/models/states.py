"""What the manager knows of each model: states, versions, and the index rows they show as."""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..backend import Backend
from ..errors import ModelNotReady
from ..model_config import ModelConfig
from ..scheduling import Scheduler
from ..stats import ModelStats
from .override import Source

#: Key of a failure that concerns the whole model (bad config), not one version.
WHOLE_MODEL = -1


class ModelState(enum.Enum):
    UNKNOWN = "UNKNOWN"
    UNAVAILABLE = "UNAVAILABLE"
    LOADING = "LOADING"
    READY = "READY"
    UNLOADING = "UNLOADING"


@dataclass(eq=False)
class ModelVersion:
    """One loaded (or failed) version of a model."""

    name: str
    version: int
    state: ModelState
    config: ModelConfig
    reason: str = ""
    instances: list[Backend] = field(default_factory=list)
    scheduler: Scheduler | None = None
    stats: ModelStats | None = None
    in_flight: int = 0
    _drained: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def version_str(self) -> str:
        return str(self.version) if self.version >= 0 else ""

    @property
    def ready(self) -> bool:
        return self.state is ModelState.READY

    @contextlib.contextmanager
    def request(self) -> Iterator[ModelVersion]:
        """Count a request in flight so an unload waits for it to finish."""
        self.enter()
        try:
            yield self
        finally:
            self.leave()

    def enter(self) -> None:
        """Count a request in flight (``request()`` without the context manager)."""
        if not self.in_flight:
            self._drained.clear()
        self.in_flight += 1

    def leave(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self._drained.set()

    async def drain(self) -> None:
        if self.in_flight:
            await self._drained.wait()


@dataclass(frozen=True, slots=True)
class IndexEntry:
    name: str
    version: str = ""
    state: str = ""
    reason: str = ""


@dataclass(eq=False)
class ModelRecord:
    """One model as the manager tracks it across loads and unloads."""

    name: str
    #: The versions requests are routed to (or the failed ones, if none ever loaded).
    versions: dict[int, ModelVersion] = field(default_factory=dict)
    #: Versions of a load in progress, shown as LOADING until swapped in.
    loading: dict[int, ModelVersion] = field(default_factory=dict)
    #: Why the last load failed while earlier versions kept serving.
    failures: dict[int, str] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: Counted by readiness: asked for at start-up, or loaded successfully since.
    requested: bool = False
    #: What the serving versions were loaded from, and what the last load read.
    source: Source | None = None
    attempted: Source | None = None
    temp_dir: Path | None = None
    #: The last load/unload asked for and not finished: (kind, key), task.
    pending: tuple[tuple[str, Any], asyncio.Task[Any]] | None = None

    def serving(self) -> bool:
        return any(v.ready for v in self.versions.values())

    def latest_ready(self) -> ModelVersion:
        ready = [v for v in self.versions.values() if v.ready]
        if not ready:
            reasons = "; ".join(dict.fromkeys(v.reason for v in self.versions.values() if v.reason))
            raise ModelNotReady(self.name, "", reasons or "no version is READY")
        return max(ready, key=lambda v: v.version)

    def index_entries(self) -> list[IndexEntry]:
        """Serving (or failed) versions, then LOADING ones and failures not otherwise shown."""
        return [*self._version_entries(), *self._loading_entries(), *self._failure_entries()]

    def _version_entries(self) -> Iterator[IndexEntry]:
        for v in sorted(self.versions.values(), key=lambda v: v.version):
            failure = self.failures.get(v.version) or self.failures.get(WHOLE_MODEL)
            kept = f"last load failed, this version kept serving: {failure}"
            reason = f"{v.reason or ''}{kept if failure and v.ready else ''}"
            yield IndexEntry(self.name, v.version_str, v.state.value, reason)

    def _loading_entries(self) -> Iterator[IndexEntry]:
        for version, mv in sorted(self.loading.items()):
            if version not in self.versions or not self.versions[version].ready:
                yield IndexEntry(self.name, mv.version_str, ModelState.LOADING.value)

    def _failure_entries(self) -> Iterator[IndexEntry]:
        for version, reason in sorted(self.failures.items()):
            if version != WHOLE_MODEL and version not in self.versions:
                yield IndexEntry(self.name, str(version), ModelState.UNAVAILABLE.value, reason)
