"""What the manager knows of each model: states, versions, and the index rows they show as."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelplatform.base.errors import ModelNotFound, ModelNotReady
from modelplatform.base.model_config import ModelConfig
from modelplatform.base.validation import RequestRules
from modelplatform.models.backend import Backend
from modelplatform.models.labels import Labels
from modelplatform.models.override import Source
from modelplatform.models.response_cache import VersionCache
from modelplatform.models.scheduling import Scheduler
from modelplatform.models.stats import ModelStats

#: Key of a failure that concerns the whole model (bad config), not one version.
WHOLE_MODEL = -1
#: The reason of a version that was unloaded cleanly (Triton's word).
UNLOADED = "unloaded"


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
    #: The version folder's name as on disk ("" when it is the plain number).
    folder: str = ""
    instances: list[Backend] = field(default_factory=list)
    scheduler: Scheduler | None = None
    stats: ModelStats | None = None
    #: The outputs' labels (``label_filename``), read at load: the classification extension's.
    labels: Labels = field(default_factory=dict)
    #: Its use of the server's response cache; None unless its config enables it and the
    #: server has one (``--cache-config``).
    cache: VersionCache | None = None
    in_flight: int = 0
    _drained: asyncio.Event | None = None
    _rules: RequestRules | None = None

    @property
    def rules(self) -> RequestRules:
        """The request checks for the current config (a backend may complete it at load)."""
        rules = self._rules
        if rules is None or rules.config is not self.config:
            rules = self._rules = RequestRules(self.config)
        return rules

    def version_dir(self, model_dir: Path) -> Path:
        """The folder this version is read from, inside ``model_dir``."""
        return model_dir / (self.folder or str(self.version))

    @property
    def accepts_device_memory(self) -> bool:
        """Whether this version's backend reads inputs left in GPU memory (Backend.accepts_device_memory)."""
        return bool(self.instances) and type(self.instances[0]).accepts_device_memory

    @functools.cached_property
    def version_str(self) -> str:  # cached: every response names it, and a version never changes
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
        self.in_flight += 1

    def leave(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0 and self._drained is not None:
            self._drained.set()

    async def drain(self) -> None:
        """Wait until no request is in flight. The event exists only while someone waits:
        setting and clearing one on every request cost two Python calls each."""
        while self.in_flight:
            if self._drained is None or self._drained.is_set():
                self._drained = asyncio.Event()
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
    #: Versions a reload dropped (e.g. a new version policy): shown UNLOADING while
    #: they drain, then UNAVAILABLE "unloaded", until a load brings them back.
    retired: dict[int, ModelVersion] = field(default_factory=dict)
    #: Why the last load failed while earlier versions kept serving.
    failures: dict[int, str] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: Counted by readiness: asked for at start-up, or loaded successfully since.
    requested: bool = False
    #: Whether any version was ever READY: until then a running load is "not yet" (503).
    ever_ready: bool = False
    #: What the serving versions were loaded from, and what the last load read.
    source: Source | None = None
    attempted: Source | None = None
    temp_dir: Path | None = None
    #: The last load/unload asked for and not finished: (kind, key), task.
    pending: tuple[tuple[str, Any], asyncio.Task[Any]] | None = None

    def serving(self) -> bool:
        return any(v.ready for v in self.versions.values())

    def serve(self, fresh: dict[int, ModelVersion]) -> list[ModelVersion]:
        """Route requests to ``fresh``; returns the versions it replaces, to drain and unload.

        Of those, the ones the new set drops stay in the index as ``retired``
        (the others are shown by their successor, under the same number).
        """
        old = self.versions
        dropped = {v: mv for v, mv in old.items() if v not in fresh and _shown_once_gone(mv)}
        kept = {v: mv for v, mv in self.retired.items() if v not in fresh}
        self.versions, self.retired = fresh, {**kept, **dropped}
        self.ever_ready = self.ever_ready or self.serving()
        return list(old.values())

    # ---- what a request finds ----

    def latest_ready(self) -> ModelVersion:
        """The newest READY version; else ModelNotReady (first load running) or ModelNotFound."""
        newest = None
        for candidate in self.versions.values():  # one pass, no list: every unversioned request asks
            if candidate.state is ModelState.READY and (newest is None or candidate.version > newest.version):
                newest = candidate
        if newest is not None:
            return newest
        if self.first_load_running():
            raise ModelNotReady(self.name)
        reasons = (_failure(v) for v in self.versions.values())
        reason = "; ".join(dict.fromkeys(r for r in reasons if r))
        raise ModelNotFound(self.name, reason=reason, known=True)

    def ready_version(self, number: int) -> ModelVersion:
        """Version ``number`` if READY; else ModelNotReady (first load running) or ModelNotFound."""
        found = self.versions.get(number)
        if found is not None and found.ready:
            return found
        if self.first_load_running() and (number in self.loading or not self.loading):
            raise ModelNotReady(self.name, str(number))
        raise ModelNotFound(self.name, str(number), _failure(found) if found else "")

    def first_load_running(self) -> bool:
        """No version was ever READY and a load is under way (planned or still queued)."""
        if self.ever_ready:
            return False
        if self.loading:
            return True
        return self.pending is not None and self.pending[0][0] == "load" and not self.pending[1].done()

    # ---- the index ----

    def index_entries(self) -> list[IndexEntry]:
        """One row per version number, whatever it is part of at this instant.

        A version both serving and being reloaded shows READY (it answers
        requests) until its successor is swapped in; otherwise a load in
        progress shows LOADING over the version it will replace.
        """
        numbers = {*self.versions, *self.loading, *self.retired}
        numbers |= {v for v in self.failures if v != WHOLE_MODEL}
        return [self._entry(number) for number in sorted(numbers)]

    def _entry(self, number: int) -> IndexEntry:
        current = self.versions.get(number)
        if current is not None and current.ready:
            return IndexEntry(self.name, str(number), ModelState.READY.value, self._kept(number))
        if number in self.loading:
            return IndexEntry(self.name, str(number), ModelState.LOADING.value)
        shown = current or self.retired.get(number)
        if shown is not None:
            return IndexEntry(self.name, shown.version_str, shown.state.value, shown.reason)
        return IndexEntry(self.name, str(number), ModelState.UNAVAILABLE.value, self.failures[number])

    def _kept(self, number: int) -> str:
        """The reason a READY version carries: a later load failed and it kept serving."""
        failure = self.failures.get(number) or self.failures.get(WHOLE_MODEL)
        return f"last load failed, this version kept serving: {failure}" if failure else ""


def _shown_once_gone(version: ModelVersion) -> bool:
    """Serving, draining or cleanly unloaded; a failed load's placeholder is not kept."""
    if version.version == WHOLE_MODEL:
        return False
    return version.state is not ModelState.UNAVAILABLE or version.reason == UNLOADED


def _failure(version: ModelVersion) -> str:
    """Why a version that is not READY failed to load ("" when it was unloaded or is changing)."""
    if version.state is ModelState.UNAVAILABLE and version.reason != UNLOADED:
        return version.reason
    return ""
