"""The model manager: what is loaded, in which state, and why not.

States follow Triton: UNAVAILABLE, LOADING, READY, UNLOADING (plus UNKNOWN for
a model seen on disk but never asked for). Loads and unloads of one model are
serialised by a per-model lock, so two concurrent load requests never load it
twice; different models load concurrently and never stall inference.
A reload builds the new versions completely, swaps them in, and only then
drains and unloads the old ones, so no request is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

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
        self.in_flight += 1
        self._drained.clear()
        try:
            yield self
        finally:
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
class _Model:
    name: str
    versions: dict[int, ModelVersion] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    requested: bool = False


@dataclass(frozen=True, slots=True)
class LoadOverride:
    """A load request's replacement configuration and/or model folder."""

    config: pb.ModelConfig | None = None
    model_dir: Path | None = None


class ModelManager:
    def __init__(self, root: Path, backends: BackendRegistry) -> None:
        self.root = root
        self._backends = backends
        self._models: dict[str, _Model] = {}

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

    def all_requested_ready(self) -> bool:
        """Strict readiness: every model asked for has all its versions READY."""
        return all(
            model.versions and all(v.ready for v in model.versions.values())
            for model in self._models.values()
            if model.requested
        )

    def index(self, ready_only: bool = False) -> list[IndexEntry]:
        """Models on disk and loaded, Triton style: never-loaded ones carry only a name."""
        names = set(repository.scan(self.root)) | set(self._models)
        entries: list[IndexEntry] = []
        for name in sorted(names):
            versions = self.versions(name)
            if not versions and not ready_only:
                entries.append(IndexEntry(name))
            for v in versions:
                if v.ready or not ready_only:
                    entries.append(IndexEntry(name, v.version_str, v.state.value, v.reason))
        return entries

    def _latest_ready(self, model: _Model) -> ModelVersion:
        ready = [v for v in model.versions.values() if v.ready]
        if not ready:
            reasons = "; ".join(v.reason for v in model.versions.values() if v.reason)
            raise ModelNotReady(model.name, "", reasons or "no version is READY")
        return max(ready, key=lambda v: v.version)

    # ---- lifecycle ----

    async def load(self, name: str, override: LoadOverride | None = None) -> None:
        """Load (or reload) a model; raises with the reason if no version loads."""
        model = self._models.setdefault(name, _Model(name))
        async with model.lock:
            model.requested = True
            reason = await self._load_locked(model, override or LoadOverride())
        if reason:
            raise InvalidArgument(f"failed to load '{name}': {reason}")

    async def unload(self, name: str) -> None:
        model = self._models.get(name)
        if model is None:
            raise ModelNotFound(name)
        async with model.lock:
            model.requested = False
            await asyncio.gather(*(self._unload_version(v) for v in model.versions.values()))

    async def shutdown(self) -> None:
        await asyncio.gather(
            *(self.unload(name) for name, m in self._models.items() if m.versions),
            return_exceptions=True,
        )

    async def _load_locked(self, model: _Model, override: LoadOverride) -> str:
        """Load and swap in; returns the failure reason, or "" when every version loaded."""
        model_dir = override.model_dir or self.root / model.name
        try:
            config, entry = self._read(model.name, model_dir, override.config)
        except ModelPlatformError as error:
            return self._record_failure(model, str(error))
        wanted = config.version_policy.select(list(entry.versions))
        if not wanted:
            return self._record_failure(model, "no version folder matches the version policy")
        fresh = await asyncio.gather(
            *(self._load_version(config, model_dir, v) for v in wanted)
        )
        old = model.versions
        model.versions = {v.version: v for v in fresh}
        await asyncio.gather(*(self._unload_version(v) for v in old.values()))
        failed = [v for v in fresh if not v.ready]
        return f"version {failed[0].version_str}: {failed[0].reason}" if failed else ""

    def _read(
        self, name: str, model_dir: Path, override: pb.ModelConfig | None
    ) -> tuple[ModelConfig, repository.ModelEntry]:
        if not model_dir.is_dir():
            raise ModelNotFound(name)
        proto = override if override is not None else model_config.load_file(model_dir)
        if override is not None:
            _keep_backend(proto, model_config.load_file(model_dir))
        proto.name = name
        return model_config.from_proto(proto), repository.read_model(model_dir)

    def _record_failure(self, model: _Model, reason: str) -> str:
        """Keep READY versions serving; otherwise show the reason on a versionless entry."""
        log.error("model_load_failed", model=model.name, reason=reason)
        if not any(v.ready for v in model.versions.values()):
            failed = ModelVersion(
                model.name, -1, ModelState.UNAVAILABLE, ModelConfig(model.name), reason=reason
            )
            model.versions = {-1: failed}
        return reason

    async def _load_version(self, config: ModelConfig, model_dir: Path, version: int) -> ModelVersion:
        mv = ModelVersion(config.name, version, ModelState.LOADING, config)
        log.info("model_loading", model=config.name, version=version)
        try:
            cls = self._backends.resolve(config, model_dir)
            reason = cls.unavailable_reason()
            if reason:
                raise InvalidArgument(f"backend '{cls.kind}' is unavailable: {reason}")
            await self._start_instances(mv, cls, model_dir / str(version))
        except Exception as error:  # noqa: BLE001 - any load failure is the model's reason
            await self._stop_instances(mv)
            mv.state, mv.reason = ModelState.UNAVAILABLE, _reason(error)
            log.error("model_load_failed", model=config.name, version=version, reason=mv.reason)
            return mv
        mv.state = ModelState.READY
        log.info("model_loaded", model=config.name, version=version, backend=cls.kind)
        return mv

    async def _start_instances(self, mv: ModelVersion, cls: type[Backend], version_dir: Path) -> None:
        for index in range(mv.config.instance_count):
            instance = cls(mv.config, version_dir, index)
            mv.instances.append(instance)
            await instance.load()
        mv.config = mv.instances[0].config  # a backend may have completed the config
        mv.stats = ModelStats(mv.name, mv.version_str)
        mv.scheduler = create_scheduler(mv.config, mv.instances, mv.stats)

    async def _unload_version(self, mv: ModelVersion) -> None:
        if mv.state is not ModelState.READY:
            return
        mv.state = ModelState.UNLOADING
        await mv.drain()
        if mv.scheduler is not None:
            await mv.scheduler.close()
        await self._stop_instances(mv)
        mv.state, mv.reason = ModelState.UNAVAILABLE, "unloaded"
        log.info("model_unloaded", model=mv.name, version=mv.version)

    async def _stop_instances(self, mv: ModelVersion) -> None:
        for instance in mv.instances:
            try:
                await instance.unload()
            except Exception as error:  # noqa: BLE001 - unload must reach every instance
                log.error("model_unload_failed", model=mv.name, reason=_reason(error))
        mv.instances.clear()


def _keep_backend(override: pb.ModelConfig, on_disk: pb.ModelConfig) -> None:
    """An override without backend/platform keeps what the model's folder implies."""
    if not override.backend and not override.platform:
        override.backend, override.platform = on_disk.backend, on_disk.platform


def _reason(error: BaseException) -> str:
    if isinstance(error, ModelPlatformError):
        return error.message
    return f"{type(error).__name__}: {error}"
