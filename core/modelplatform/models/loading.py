"""Loading, swapping and unloading one model's versions and their backend instances.

Every method runs under the model's lock (manager.py queues them), so it may
change the model's record freely. A reload builds the new versions
completely, swaps them in, and only then drains and unloads the old ones; a
failed reload keeps the previous versions serving and records the reason.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import structlog

from modelplatform.base import model_config
from modelplatform.base.errors import InvalidArgument, ModelNotFound, ModelPlatformError
from modelplatform.base.model_config import ModelConfig
from modelplatform.models import repository
from modelplatform.models.backend import Backend, BackendRegistry, ServerCalls
from modelplatform.models.labels import read_labels
from modelplatform.models.override import LoadOverride, Source
from modelplatform.models.reshaping import has_reshape, reshaping
from modelplatform.models.response_cache import ResponseCache, VersionCache
from modelplatform.models.scheduling.factory import create_scheduler
from modelplatform.models.states import WHOLE_MODEL, ModelRecord, ModelState, ModelVersion
from modelplatform.models.stats import LatencyBuckets
from modelplatform.models.warmup import WarmupSource, warm_up

log = structlog.get_logger("modelplatform.models")


class Loader:
    """Turns load and unload requests into versions, instances and schedulers."""

    def __init__(
        self,
        root: Path,
        backends: BackendRegistry,
        warmup_source: WarmupSource | None,
        latency_buckets: LatencyBuckets,
        response_cache: ResponseCache | None = None,
    ) -> None:
        self.root = root
        #: The server's response cache (``--cache-config``), else None.
        self._response_cache = response_cache
        self._backends = backends
        #: The server's latency histogram bounds, read when a version's counters are made.
        self._latency_buckets = latency_buckets
        #: The plugins' warmup requests for a version (the ``warmup_requests`` hook).
        self._warmup_source = warmup_source
        #: Handed to every backend instance before its load (ModelManager.bind_dataplane).
        self.dataplane: ServerCalls | None = None

    async def load(self, model: ModelRecord, override: LoadOverride) -> str:
        """Load and swap in; returns the failure reason, or "" when every version loaded."""
        model_dir = override.model_dir or self.root / model.name
        source: Source = (override.key, await asyncio.to_thread(repository.fingerprint, model_dir))
        if _unchanged(model, source):
            log.info("model_load_skipped", model=model.name, reason="unchanged and READY")
            return ""
        model.attempted = source
        try:
            fresh = _planned(model.name, model_dir, override.config)
        except ModelPlatformError as error:
            await _discard(override)
            return _record_failure(model, {WHOLE_MODEL: str(error)})
        await self._load_versions(model, fresh, model_dir)
        return await self._swap(model, fresh, source, override)

    async def unload(self, model: ModelRecord) -> None:
        model.requested = False
        await self._unload_versions(model.versions.values())
        for mv in model.versions.values():
            mv.state, mv.reason = ModelState.UNAVAILABLE, "unloaded"
        model.failures, model.source, model.attempted = {}, None, None
        if model.temp_dir is not None:
            await _remove_dir(model.temp_dir)
            model.temp_dir = None

    async def _load_versions(self, model: ModelRecord, fresh: list[ModelVersion], model_dir: Path) -> None:
        model.loading = {mv.version: mv for mv in fresh}
        try:
            await asyncio.gather(*(self._load_version(mv, model_dir) for mv in fresh))
        finally:
            model.loading = {}

    async def _swap(
        self, model: ModelRecord, fresh: list[ModelVersion], source: Source, override: LoadOverride
    ) -> str:
        failed = {v.version: v.reason for v in fresh if not v.ready}
        if failed and model.serving():  # keep the serving versions, drop the new ones
            await self._unload_versions(fresh)
            await _discard(override)
            return _record_failure(model, failed)
        old_dir = model.temp_dir
        old = model.serve({v.version: v for v in fresh})
        model.failures, model.source = {}, source
        model.temp_dir = override.model_dir if override.temporary else None
        if not failed:
            model.requested = True
        await self._unload_versions(old)
        if old_dir is not None and old_dir != model.temp_dir:
            await _remove_dir(old_dir)
        if failed and not model.serving():
            await _discard(override)
            model.temp_dir = None
        version, reason = next(iter(failed.items()), (0, ""))
        return f"version {version}: {reason}" if reason else ""

    async def _load_version(self, mv: ModelVersion, model_dir: Path) -> None:
        log.info("model_loading", model=mv.name, version=mv.version)
        started = time.perf_counter()
        try:
            cls = self._backends.resolve(mv.config, model_dir)
            reason = cls.unavailable_reason()
            if reason:
                raise InvalidArgument(f"backend '{cls.kind}' is unavailable: {reason}")
            if has_reshape(mv.config):  # Triton's reshape, around every backend alike
                cls = reshaping(cls)
            await _start_instances(mv, cls, mv.version_dir(model_dir), self.dataplane)
            mv.labels = read_labels(mv.config, model_dir)
            mv.stats = self._latency_buckets.new_stats(mv.name, mv.version_str)
            mv.cache = self._version_cache(mv)
            mv.scheduler = create_scheduler(mv.config, mv.instances, mv.stats)
            await warm_up(mv, model_dir, self._warmup_source)  # still LOADING: not routed to
        except Exception as error:  # noqa: BLE001 - any load failure is the model's reason
            await _stop_instances(mv)
            mv.state, mv.reason = ModelState.UNAVAILABLE, _reason(error)
            log.error("model_load_failed", model=mv.name, version=mv.version, reason=mv.reason)
            return
        mv.state = ModelState.READY
        elapsed = time.perf_counter() - started
        if mv.stats is not None:
            mv.stats.load_ns = int(elapsed * 1e9)
        ms = round(elapsed * 1000, 1)  # warmup included
        log.info("model_loaded", model=mv.name, version=mv.version, backend=cls.kind, duration_ms=ms)

    def _version_cache(self, mv: ModelVersion) -> VersionCache | None:
        if not mv.config.response_cache:
            return None
        if self._response_cache is None or mv.stats is None:
            log.warning("response_cache_unused", model=mv.name, version=mv.version,
                        reason="the server has no response cache (--cache-config local,size=N)")  # fmt: skip
            return None
        mv.stats.response_cache = True
        return VersionCache(self._response_cache, mv.stats)

    async def _unload_versions(self, versions: Iterable[ModelVersion]) -> None:
        await asyncio.gather(*(_unload_version(v) for v in versions))


def _planned(name: str, model_dir: Path, override: dict[str, Any] | None) -> list[ModelVersion]:
    """The versions to load (LOADING), sharing the configuration read from the folder."""
    if not model_dir.is_dir():
        raise ModelNotFound(name)
    config = model_config.read_config(model_dir, override, name)
    entry = repository.read_model(model_dir)
    wanted = config.version_policy.select(list(entry.versions))
    if not wanted:
        raise InvalidArgument("no version folder matches the version policy")
    return [ModelVersion(name, v, ModelState.LOADING, config, folder=entry.folders[v]) for v in wanted]


def _unchanged(model: ModelRecord, source: Source) -> bool:
    return (
        model.source == source
        and not model.failures
        and bool(model.versions)
        and all(v.ready for v in model.versions.values())
    )


def _record_failure(model: ModelRecord, failures: dict[int, str]) -> str:
    """Keep READY versions serving; otherwise show the reasons as UNAVAILABLE versions."""
    log.error("model_load_failed", model=model.name, reasons=failures)
    if model.serving():
        model.failures = failures
    else:
        placeholder = ModelConfig(model.name)
        model.versions = {
            v: ModelVersion(model.name, v, ModelState.UNAVAILABLE, placeholder, reason=r)
            for v, r in failures.items()
        }
    version, reason = next(iter(failures.items()))
    return reason if version == WHOLE_MODEL else f"version {version}: {reason}"


async def _start_instances(
    mv: ModelVersion, cls: type[Backend], version_dir: Path, dataplane: ServerCalls | None
) -> None:
    for index in range(mv.config.instance_count):
        instance = cls(mv.config, version_dir, index)
        instance.dataplane = dataplane
        mv.instances.append(instance)
        await instance.load()
        # A backend may have completed the config (Triton's auto-complete): the next
        # instances, the scheduler and the config endpoint all see the completed one.
        mv.config = instance.config


async def _unload_version(mv: ModelVersion) -> None:
    if mv.state is not ModelState.READY:
        return
    mv.state = ModelState.UNLOADING
    await mv.drain()
    if mv.scheduler is not None:
        await mv.scheduler.close()
    await _stop_instances(mv)
    mv.scheduler, mv.stats, mv.cache = None, None, None
    mv.state, mv.reason = ModelState.UNAVAILABLE, "unloaded"
    log.info("model_unloaded", model=mv.name, version=mv.version)


async def _stop_instances(mv: ModelVersion) -> None:
    for instance in mv.instances:
        try:
            await instance.unload()
        except Exception as error:  # noqa: BLE001 - unload must reach every instance
            log.error("model_unload_failed", model=mv.name, reason=_reason(error))
    mv.instances.clear()


async def _discard(override: LoadOverride) -> None:
    if override.temporary and override.model_dir is not None:
        await _remove_dir(override.model_dir)


async def _remove_dir(path: Path) -> None:
    await asyncio.to_thread(shutil.rmtree, path, True)
    log.info("model_folder_removed", path=str(path))


def _reason(error: BaseException) -> str:
    if isinstance(error, ModelPlatformError):
        return error.message
    return f"{type(error).__name__}: {error}"
