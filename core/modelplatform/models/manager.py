"""The model manager: queries on the request path, and one queue of operations per model.

Queries are dict lookups. Loads and unloads of one model run as tasks under
that model's lock, in arrival order (the work itself is in loading.py); a
load arriving while an identical one is pending joins it. Under
``--workers N`` a :class:`Replicator`, handed to the constructor by the
composition root, applies every API load or unload on the sibling workers too.
With a remote repository, a load first brings that model's folder in step
with the bucket (``RepositorySource.fetch_model``), and the repository index
lists the bucket's model folders rather than the mirror's (``RemoteListing``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from modelplatform.base.errors import InvalidArgument, ModelNotFound, ModelPlatformError
from modelplatform.models import repository
from modelplatform.models.backend import BackendRegistry, ServerCalls
from modelplatform.models.loading import Loader
from modelplatform.models.override import LoadOverride
from modelplatform.models.remote_repository import RemoteListing, RepositorySource
from modelplatform.models.response_cache import ResponseCache
from modelplatform.models.states import IndexEntry, ModelRecord, ModelVersion
from modelplatform.models.stats import LatencyBuckets, ModelStats
from modelplatform.models.warmup import WarmupSource


class Replicator(Protocol):
    """Applies a model operation on sibling worker processes (cluster.SiblingLink)."""

    async def sibling_copies(self, override: LoadOverride) -> list[Path]: ...

    async def replicate(
        self, operation: str, name: str, override: LoadOverride | None, copies: list[Path]
    ) -> None: ...


class ModelManager:
    def __init__(
        self,
        root: Path,
        backends: BackendRegistry,
        strict_readiness: bool = True,
        replicator: Replicator | None = None,
        warmup_source: WarmupSource | None = None,
        remote: RepositorySource | None = None,
        response_cache: ResponseCache | None = None,
    ) -> None:
        self.root = root
        self.strict_readiness = strict_readiness
        #: This server's latency histogram bounds: every counter made here takes them.
        self.latency_buckets = LatencyBuckets()
        #: The server's response cache (``--cache-config``), shared by every model enabling it.
        self.response_cache = response_cache
        self._loader = Loader(root, backends, warmup_source, self.latency_buckets, response_cache)
        self._models: dict[str, ModelRecord] = {}
        #: Relays API loads/unloads to sibling workers under ``--workers N``, else None.
        self._replicator = replicator
        #: The remote repository ``root`` mirrors (``--model-repository s3://...``), else None.
        self._remote = remote
        self._listing = RemoteListing(remote) if remote is not None else None
        #: Counters of models as a whole (version ""): loads and unloads here, requests
        #: refused before any version took them (the dataplane). "" holds the names the
        #: server does not know, so clients cannot add entries.
        self.model_counters: dict[str, ModelStats] = {}

    # ---- queries (request path: dict lookups only) ----

    def get(self, name: str, version: str = "") -> ModelVersion:
        """The READY version asked for (latest READY when ``version`` is empty).

        A model with nothing READY is not there (ModelNotFound, as an unknown
        name), unless its first load is still running (ModelNotReady, transient).
        """
        model = self._models.get(name)
        if model is None:
            raise ModelNotFound(name, version)
        if not version:
            return model.latest_ready()
        if not version.isdigit():
            raise InvalidArgument(f"model '{name}': version '{version}' is not a number")
        return model.ready_version(int(version))

    def versions(self, name: str) -> list[ModelVersion]:
        model = self._models.get(name)
        return sorted(model.versions.values(), key=lambda v: v.version) if model else []

    def is_ready(self, name: str, version: str = "") -> bool:
        try:
            self.get(name, version)
        except ModelPlatformError:
            return False
        return True

    def names(self) -> list[str]:
        """Every model the manager has seen (loaded, failed or unloaded)."""
        return sorted(self._models)

    def ready(self) -> bool:
        return self.all_requested_ready()

    def all_requested_ready(self) -> bool:
        """The models' part of server readiness.

        Strict (Triton's default): every model asked for has all its versions
        READY. Lenient: always true, the server is ready once it is up.
        """
        return not self.strict_readiness or all(
            model.versions and all(v.ready for v in model.versions.values())
            for model in self._models.values()
            if model.requested
        )

    def attempted_fingerprint(self, name: str) -> repository.Fingerprint | None:
        """The files the last load of ``name`` read from the repository (poll mode)."""
        model = self._models.get(name)
        if model is None or model.attempted is None or model.attempted[0] != (None, None):
            return None
        return model.attempted[1]

    def loaded_names(self) -> list[str]:
        return [name for name, model in self._models.items() if model.serving()]

    def index(self, ready_only: bool = False) -> list[IndexEntry]:
        """Models on disk and loaded, Triton style: never-loaded ones carry only a name.

        Reads the local folder only (the mirror, for a remote repository):
        cheap enough for a metrics scrape. The repository API calls
        :meth:`repository_index`.
        """
        return self._entries(repository.model_names(self.root), ready_only)

    async def repository_index(self, ready_only: bool = False) -> list[IndexEntry]:
        """:meth:`index` with a remote repository's model folders as listed now.

        ``ready_only`` lists only loaded models, so the store is not asked.
        Raises ``Unavailable`` naming the URL when the listing fails or is slow.
        """
        if self._listing is None or ready_only:
            return self.index(ready_only)
        return self._entries(await self._listing.model_names(), ready_only)

    def _entries(self, on_disk: Iterable[str], ready_only: bool) -> list[IndexEntry]:
        names = set(on_disk) | set(self._models)
        entries: list[IndexEntry] = []
        for name in sorted(names):
            model = self._models.get(name)
            found = model.index_entries() if model else []
            if not found and not ready_only:
                entries.append(IndexEntry(name))
            entries += [e for e in found if e.state == "READY" or not ready_only]
        return entries

    # ---- lifecycle ----

    async def load(
        self,
        name: str,
        override: LoadOverride | None = None,
        *,
        required: bool = False,
        replicate: bool = True,
    ) -> None:
        """Load (or reload) a model; raises with the reason if it does not load.

        ``required`` counts the model in strict readiness even if it fails
        (start-up models); otherwise it counts once it has loaded. With
        ``--workers N`` the load is then applied by every sibling worker too
        (the cluster package) unless ``replicate`` is false.
        """
        override = override or LoadOverride()
        _check_name(name)
        replicator = self._replicator if replicate else None
        copies = await replicator.sibling_copies(override) if replicator else []
        given = override if override.given else None
        try:
            with self._outcome_counted(name, ModelStats.record_load):
                await self._load_here(name, override, required)
        except ModelPlatformError:
            if replicator:
                with contextlib.suppress(ModelPlatformError):
                    await replicator.replicate("load", name, given, copies)
            raise
        if replicator:
            await replicator.replicate("load", name, given, copies)

    async def _load_here(self, name: str, override: LoadOverride, required: bool) -> None:
        if override.model_dir is None and self._remote is not None:
            await asyncio.to_thread(self._remote.fetch_model, name)  # raises naming the URL
        model = self._models.get(name)
        if model is None:
            if override.model_dir is None and not (self.root / name).is_dir():
                raise ModelNotFound(name)
            model = self._models.setdefault(name, ModelRecord(name))
        if required:
            model.requested = True
        work = functools.partial(self._loader.load, model, override)
        reason = await _submit(model, ("load", override.key), work)
        if reason:
            raise InvalidArgument(f"failed to load '{name}': {reason}")

    async def unload(self, name: str, *, replicate: bool = True, dependents: bool = False) -> None:
        """Unload every version of ``name`` once its requests in flight have finished.

        The ensembles whose steps call ``name`` are unloaded first when
        ``dependents`` (Triton's ``unload_dependents``); otherwise their requests
        in flight finish first, so no pipeline loses a step half-way.
        """
        _check_name(name)
        for ensemble in self.dependents_of(name):
            if dependents:
                await self.unload(ensemble, replicate=replicate, dependents=True)
            else:
                await _drained(self._models[ensemble])
        with self._outcome_counted(name, ModelStats.record_unload):
            await self._unload_here(name)
        if replicate and self._replicator:
            await self._replicator.replicate("unload", name, None, [])

    def dependents_of(self, name: str) -> list[str]:
        """The serving models (ensembles) whose steps call ``name``."""
        return [
            other
            for other, model in self._models.items()
            if other != name
            and any(v.ready and name in v.config.composing_models for v in model.versions.values())
        ]

    def bind_dataplane(self, dataplane: ServerCalls) -> None:
        """What every backend instance may call back, handed to it before its load (composition root)."""
        self._loader.dataplane = dataplane

    async def _unload_here(self, name: str) -> None:
        model = self._models.get(name)
        if model is None:
            if (self.root / name).is_dir():
                return  # on disk, never loaded: nothing to do
            raise ModelNotFound(name)
        await _submit(model, ("unload", None), functools.partial(self._loader.unload, model))

    def counters_of(self, name: str) -> ModelStats:
        """``name``'s model-level counters; those of "" when the server does not know it."""
        key = name if name in self._models else ""
        found = self.model_counters.get(key)
        if found is None:
            found = self.model_counters[key] = self.latency_buckets.new_stats(key, "")
        return found

    @contextlib.contextmanager
    def _outcome_counted(self, name: str, record: Callable[[ModelStats, bool], None]) -> Iterator[None]:
        try:
            yield
        except ModelPlatformError:
            record(self.counters_of(name), False)
            raise
        record(self.counters_of(name), True)

    async def shutdown(self) -> None:
        await asyncio.gather(
            *(self.unload(name, replicate=False) for name, m in self._models.items() if m.versions),
            return_exceptions=True,
        )


async def _submit(model: ModelRecord, key: tuple[str, Any], work: Callable[[], Awaitable[Any]]) -> Any:
    """Run ``work`` under the model's lock, in arrival order; join an identical pending one.

    The task is shielded: a client that goes away does not cancel a load half-way.
    """
    if model.pending and model.pending[0] == key and not model.pending[1].done():
        return await asyncio.shield(model.pending[1])

    async def locked() -> Any:
        async with model.lock:
            return await work()

    task = asyncio.ensure_future(locked())
    task.add_done_callback(_retrieve)
    model.pending = (key, task)
    return await asyncio.shield(task)


async def _drained(model: ModelRecord) -> None:
    """Until the requests in flight on ``model``'s versions now have finished."""
    await asyncio.gather(*(v.drain() for v in model.versions.values()))


def _check_name(name: str) -> None:
    """A model name is one folder name: nothing that could reach outside the repository."""
    if not name or name.startswith(".") or "/" in name or "\\" in name or "\0" in name:
        raise InvalidArgument(f"'{name}' is not a valid model name")


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark the result seen: every awaiting client may have gone away."""
    if not task.cancelled():
        task.exception()
