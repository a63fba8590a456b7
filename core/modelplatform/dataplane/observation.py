"""The server's statistics (summed over ``--workers`` siblings) and its request observers.

Changes when counting or tracing changes. Observers are registrations owned
by whoever added them: :meth:`Observation.add_observer` returns the call that
takes the observer off again, so no plugin edits a list it does not own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from modelplatform.base.observing import RequestObserver
from modelplatform.dataplane.views import stats_of
from modelplatform.models import ModelManager
from modelplatform.models.stats import ModelStats


class Siblings(Protocol):
    async def statistics(self, name: str, version: str, refused: bool = False) -> list[list[ModelStats]]:
        """Every other worker's local statistics for the same query."""
        ...


class Observation:
    """Counters of the models (this process's and the siblings'), and who is told of each request."""

    def __init__(self, models: ModelManager, siblings: Siblings | None = None) -> None:
        self._models = models
        #: The other workers of ``--workers N`` (cluster.SiblingLink), else None.
        self._siblings = siblings
        self._observers: list[RequestObserver] = []

    @property
    def observers(self) -> Sequence[RequestObserver]:
        """Told of every counted request when it ends; the live sequence the edges read per call."""
        return self._observers

    def add_observer(self, observer: RequestObserver) -> Callable[[], None]:
        """Tell ``observer`` of every counted request from now on (at start-up, or on the event
        loop while serving); returns the call that stops it (calling it twice is harmless)."""
        self._observers.append(observer)

        def remove() -> None:
            if observer in self._observers:
                self._observers.remove(observer)

        return remove

    async def statistics(self, name: str = "", version: str = "") -> list[ModelStats]:
        """Counters of every READY version: of all models, of one model, or of one version.

        With ``--workers N`` they are the sums over every worker (a client's
        reads may land on any of them), asked through the cluster channel.
        """
        local = self.local_statistics(name, version)
        if self._siblings is None:
            return local
        totals = {(s.name, s.version): s for s in local}
        for part in await self._siblings.statistics(name, version):
            for stats in part:
                key = (stats.name, stats.version)
                if key in totals:  # a version only a sibling holds is not READY here
                    totals[key] = totals[key].plus(stats)
        return [totals[(s.name, s.version)] for s in local]

    async def all_statistics(self) -> list[ModelStats]:
        """What the metrics show: every READY version's counters, plus each model's own
        (version "": requests refused before any version took them, loads, unloads),
        summed over every worker, whatever any one of them holds."""
        totals = {(s.name, s.version): s for s in self.local_statistics(refused=True)}
        if self._siblings is not None:
            for part in await self._siblings.statistics("", "", refused=True):
                for stats in part:
                    key = (stats.name, stats.version)
                    totals[key] = totals[key].plus(stats) if key in totals else stats
        return list(totals.values())

    def local_statistics(self, name: str = "", version: str = "", refused: bool = False) -> list[ModelStats]:
        """This process's counters only (see :meth:`statistics`); ``refused`` adds the
        refused requests' counters (all models only: see :meth:`all_statistics`)."""
        if version:
            return stats_of([self._models.get(name, version)])
        names = [name] if name else self._models.names()
        found = stats_of([v for n in names for v in self._models.versions(n) if v.ready])
        if name and not found:
            self._models.get(name)  # raises the same not-found/not-ready error as infer
        if refused and not name:
            found += self._models.model_counters.values()
        return found
