"""The model manager: what is loaded, in which state, and why not.

States follow Triton: UNAVAILABLE, LOADING, READY, UNLOADING (plus UNKNOWN for
a model seen on disk but never asked for). Every load and unload of one model
runs as a task under that model's lock, in arrival order, so a load/unload
race ends in the state of the last request. A load arriving while an
identical load is pending joins it, and a load of an unchanged, READY model is
a no-op: concurrent loads load a model once. Different models load
concurrently; backends do their blocking work off the event loop.

A reload builds the new versions completely, swaps them in, and only then
drains and unloads the old ones, so no request is dropped. A failed reload
keeps the previous versions serving and records the reason, which the index
and the error show.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import shutil
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import structlog

from . import model_config, repository
from .backend import Backend, BackendRegistry
from .errors import InvalidArgument, ModelNotFound, ModelNotReady, ModelPlatformError
from .model_config import ModelConfig
from .protos import model_config_pb2 as pb
from .scheduling import Scheduler
from .scheduling.factory import create_scheduler
from .stats import ModelStats

log = structlog.get_logger("modelplatform.models")

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


@dataclass(frozen=True, slots=True)
class LoadOverride:
    """A load request's replacement configuration and/or model folder.

    ``temporary`` hands ``model_dir`` (e.g. uploaded files) to the manager,
    which deletes it once no version loaded from it is left.
    """

    config: pb.ModelConfig | None = None
    model_dir: Path | None = None
    temporary: bool = False

    @property
    def key(self) -> tuple[bytes | None, str | None]:
        """Equal keys ask for the same thing (so such loads may be joined)."""
        config = self.config.SerializeToString(deterministic=True) if self.config else None
        return config, str(self.model_dir) if self.model_dir else None


#: What a load read: the override's key and the files' fingerprint.
Source = tuple[tuple[bytes | None, str | None], repository.Fingerprint]


@dataclass(eq=False)
class _Model:
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
    pending: tuple[tuple[str, Any], asyncio.Task[None]] | None = None

    def serving(self) -> bool:
        return any(v.ready for v in self.versions.values())


class Replicator(Protocol):
    """Applies a model operation on sibling worker processes (cluster.Member)."""

    async def sibling_copies(self, override: LoadOverride) -> list[Path]: ...

    async def replicate(
        self, operation: str, name: str, override: LoadOverride | None, copies: list[Path]
    ) -> None: ...


class ModelManager:
    def __init__(
        self, root: Path, backends: BackendRegistry, strict_readiness: bool = True
    ) -> None:
        self.root = root
        self.strict_readiness = strict_readiness
        self._backends = backends
        self._models: dict[str, _Model] = {}
        #: Set by cluster.Member under ``--workers N``: relays loads/unloads to siblings.
        self.replicator: Replicator | None = None

    # ---- queries (request path: dict lookups only) ----

    def get(self, name: str, version: str = "") -> ModelVersion:
        """The READY version asked for (latest READY when ``version`` is empty)."""
        model = self._models.get(name)
        if model is None or not model.versions:
            raise ModelNotFound(name, version)
        if not version:
            return self._latest_ready(model)
        if not version.isdigit():
            raise InvalidArgument(f"model '{name}': version '{version}' is not a number")
        found = model.versions.get(int(version))
        if found is None:
            raise ModelNotFound(name, version)
        if not found.ready:
            raise ModelNotReady(name, version, found.reason or found.state.value)
        return found

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
        """Models on disk and loaded, Triton style: never-loaded ones carry only a name."""
        names = set(repository.model_names(self.root)) | set(self._models)
        entries: list[IndexEntry] = []
        for name in sorted(names):
            model = self._models.get(name)
            found = _index_entries(model) if model else []
            if not found and not ready_only:
                entries.append(IndexEntry(name))
            entries += [e for e in found if e.state == "READY" or not ready_only]
        return entries

    def _latest_ready(self, model: _Model) -> ModelVersion:
        ready = [v for v in model.versions.values() if v.ready]
        if not ready:
            reasons = "; ".join(dict.fromkeys(v.reason for v in model.versions.values() if v.reason))
            raise ModelNotReady(model.name, "", reasons or "no version is READY")
        return max(ready, key=lambda v: v.version)

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
        (cluster.py) unless ``replicate`` is false.
        """
        override = override or LoadOverride()
        _check_name(name)
        replicator = self.replicator if replicate else None
        copies = await replicator.sibling_copies(override) if replicator else []
        try:
            await self._load_here(name, override, required)
        except ModelPlatformError:
            if replicator:
                with contextlib.suppress(ModelPlatformError):
                    await replicator.replicate("load", name, _given(override), copies)
            raise
        if replicator:
            await replicator.replicate("load", name, _given(override), copies)

    async def _load_here(self, name: str, override: LoadOverride, required: bool) -> None:
        model = self._models.get(name)
        if model is None:
            if override.model_dir is None and not (self.root / name).is_dir():
                raise ModelNotFound(name)
            model = self._models.setdefault(name, _Model(name))
        if required:
            model.requested = True
        reason = await self._submit(model, ("load", override.key), lambda: self._load(model, override))
        if reason:
            raise InvalidArgument(f"failed to load '{name}': {reason}")

    async def unload(self, name: str, *, replicate: bool = True) -> None:
        _check_name(name)
        await self._unload_here(name)
        if replicate and self.replicator:
            await self.replicator.replicate("unload", name, None, [])

    async def _unload_here(self, name: str) -> None:
        model = self._models.get(name)
        if model is None:
            if (self.root / name).is_dir():
                return  # on disk, never loaded: nothing to do
            raise ModelNotFound(name)
        await self._submit(model, ("unload", None), lambda: self._unload(model))

    async def shutdown(self) -> None:
        await asyncio.gather(
            *(self.unload(name, replicate=False) for name, m in self._models.items() if m.versions),
            return_exceptions=True,
        )

    async def _submit(
        self, model: _Model, key: tuple[str, Any], work: Callable[[], Awaitable[Any]]
    ) -> Any:
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

    async def _load(self, model: _Model, override: LoadOverride) -> str:
        """Load and swap in; returns the failure reason, or "" when every version loaded."""
        model_dir = override.model_dir or self.root / model.name
        source: Source = (override.key, await asyncio.to_thread(repository.fingerprint, model_dir))
        if self._unchanged(model, source):
            log.info("model_load_skipped", model=model.name, reason="unchanged and READY")
            return ""
        model.attempted = source
        try:
            config, entry = self._read(model.name, model_dir, override.config)
            wanted = config.version_policy.select(list(entry.versions))
            if not wanted:
                raise InvalidArgument("no version folder matches the version policy")
        except ModelPlatformError as error:
            await self._discard(override)
            return self._record_failure(model, {WHOLE_MODEL: str(error)})
        fresh = [ModelVersion(model.name, v, ModelState.LOADING, config) for v in wanted]
        model.loading = {mv.version: mv for mv in fresh}
        try:
            await asyncio.gather(*(self._load_version(mv, model_dir) for mv in fresh))
        finally:
            model.loading = {}
        return await self._swap(model, fresh, source, override)

    def _unchanged(self, model: _Model, source: Source) -> bool:
        return (
            model.source == source
            and not model.failures
            and bool(model.versions)
            and all(v.ready for v in model.versions.values())
        )

    async def _swap(
        self, model: _Model, fresh: list[ModelVersion], source: Source, override: LoadOverride
    ) -> str:
        failed = {v.version: v.reason for v in fresh if not v.ready}
        if failed and model.serving():
            await asyncio.gather(*(self._unload_version(v) for v in fresh))
            await self._discard(override)
            return self._record_failure(model, failed)
        old, old_dir = model.versions, model.temp_dir
        model.versions = {v.version: v for v in fresh}
        model.failures, model.source = {}, source
        model.temp_dir = override.model_dir if override.temporary else None
        if not failed:
            model.requested = True
        await asyncio.gather(*(self._unload_version(v) for v in old.values()))
        if old_dir is not None and old_dir != model.temp_dir:
            await _remove_dir(old_dir)
        if failed and not model.serving():
            await self._discard(override)
            model.temp_dir = None
        version, reason = next(iter(failed.items()), (0, ""))
        return f"version {version}: {reason}" if reason else ""

    def _read(
        self, name: str, model_dir: Path, override: pb.ModelConfig | None
    ) -> tuple[ModelConfig, repository.ModelEntry]:
        if not model_dir.is_dir():
            raise ModelNotFound(name)
        proto = override if override is not None else model_config.load_file(model_dir)
        if override is not None:
            proto = _copy(override)
            _keep_backend(proto, model_config.load_file(model_dir))
        proto.name = name
        return model_config.from_proto(proto), repository.read_model(model_dir)

    def _record_failure(self, model: _Model, failures: dict[int, str]) -> str:
        """Keep READY versions serving; otherwise show the reasons as UNAVAILABLE versions."""
        log.error("model_load_failed", model=model.name, reasons=failures)
        if model.serving():
            model.failures = failures
        else:
            model.versions = {
                v: ModelVersion(model.name, v, ModelState.UNAVAILABLE, ModelConfig(model.name), reason=r)
                for v, r in failures.items()
            }
        version, reason = next(iter(failures.items()))
        return reason if version == WHOLE_MODEL else f"version {version}: {reason}"

    async def _discard(self, override: LoadOverride) -> None:
        if override.temporary and override.model_dir is not None:
            await _remove_dir(override.model_dir)

    async def _load_version(self, mv: ModelVersion, model_dir: Path) -> None:
        log.info("model_loading", model=mv.name, version=mv.version)
        try:
            cls = self._backends.resolve(mv.config, model_dir)
            reason = cls.unavailable_reason()
            if reason:
                raise InvalidArgument(f"backend '{cls.kind}' is unavailable: {reason}")
            await self._start_instances(mv, cls, model_dir / str(mv.version))
        except Exception as error:  # noqa: BLE001 - any load failure is the model's reason
            await self._stop_instances(mv)
            mv.state, mv.reason = ModelState.UNAVAILABLE, _reason(error)
            log.error("model_load_failed", model=mv.name, version=mv.version, reason=mv.reason)
            return
        mv.state = ModelState.READY
        log.info("model_loaded", model=mv.name, version=mv.version, backend=cls.kind)

    async def _start_instances(self, mv: ModelVersion, cls: type[Backend], version_dir: Path) -> None:
        for index in range(mv.config.instance_count):
            instance = cls(mv.config, version_dir, index)
            mv.instances.append(instance)
            await instance.load()
        mv.config = mv.instances[0].config  # a backend may have completed the config
        mv.stats = ModelStats(mv.name, mv.version_str)
        mv.scheduler = create_scheduler(mv.config, mv.instances, mv.stats)

    async def _unload(self, model: _Model) -> None:
        model.requested = False
        await asyncio.gather(*(self._unload_version(v) for v in model.versions.values()))
        for mv in model.versions.values():
            mv.state, mv.reason = ModelState.UNAVAILABLE, "unloaded"
        model.failures, model.source, model.attempted = {}, None, None
        if model.temp_dir is not None:
            await _remove_dir(model.temp_dir)
            model.temp_dir = None

    async def _unload_version(self, mv: ModelVersion) -> None:
        if mv.state is not ModelState.READY:
            return
        mv.state = ModelState.UNLOADING
        await mv.drain()
        if mv.scheduler is not None:
            await mv.scheduler.close()
        await self._stop_instances(mv)
        mv.scheduler, mv.stats = None, None
        mv.state, mv.reason = ModelState.UNAVAILABLE, "unloaded"
        log.info("model_unloaded", model=mv.name, version=mv.version)

    async def _stop_instances(self, mv: ModelVersion) -> None:
        for instance in mv.instances:
            try:
                await instance.unload()
            except Exception as error:  # noqa: BLE001 - unload must reach every instance
                log.error("model_unload_failed", model=mv.name, reason=_reason(error))
        mv.instances.clear()


def _given(override: LoadOverride) -> LoadOverride | None:
    return override if override.config is not None or override.model_dir is not None else None


def _check_name(name: str) -> None:
    """A model name is one folder name: nothing that could reach outside the repository."""
    if not name or name.startswith(".") or "/" in name or "\\" in name or "\0" in name:
        raise InvalidArgument(f"'{name}' is not a valid model name")


def _index_entries(model: _Model) -> list[IndexEntry]:
    """Serving (or failed) versions, then LOADING ones and failures not otherwise shown."""
    entries = []
    for v in sorted(model.versions.values(), key=lambda v: v.version):
        failure = model.failures.get(v.version) or model.failures.get(WHOLE_MODEL)
        reason = f"{v.reason or ''}{_kept(failure) if failure and v.ready else ''}"
        entries.append(IndexEntry(model.name, v.version_str, v.state.value, reason))
    for version, mv in sorted(model.loading.items()):
        if version not in model.versions or not model.versions[version].ready:
            entries.append(IndexEntry(model.name, mv.version_str, ModelState.LOADING.value))
    for version, reason in sorted(model.failures.items()):
        if version != WHOLE_MODEL and version not in model.versions:
            entries.append(IndexEntry(model.name, str(version), ModelState.UNAVAILABLE.value, reason))
    return entries


def _kept(failure: str) -> str:
    return f"last load failed, this version kept serving: {failure}"


def _copy(proto: pb.ModelConfig) -> pb.ModelConfig:
    copied = pb.ModelConfig()
    copied.CopyFrom(proto)
    return copied


def _keep_backend(override: pb.ModelConfig, on_disk: pb.ModelConfig) -> None:
    """An override without backend/platform keeps what the model's folder implies."""
    if not override.backend and not override.platform:
        override.backend, override.platform = on_disk.backend, on_disk.platform


async def _remove_dir(path: Path) -> None:
    await asyncio.to_thread(shutil.rmtree, path, True)
    log.info("model_folder_removed", path=str(path))


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark the result seen: every awaiting client may have gone away."""
    if not task.cancelled():
        task.exception()


def _reason(error: BaseException) -> str:
    if isinstance(error, ModelPlatformError):
        return error.message
    return f"{type(error).__name__}: {error}"
