"""The one path every protocol calls: health, metadata, versions, the repository, calls.

Dialects decode their wire format into an InferenceRequest, call
:meth:`DataPlane.infer`, and encode the InferenceResponse; they never touch
models or backends directly. What they read about models comes back as
frozen views (:class:`VersionInfo`, :class:`IndexEntry`, ModelConfig), never
the manager's own objects. Everything on the request path is a dict lookup
or a check against an already-frozen ModelConfig: nothing is parsed per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from collections.abc import AsyncGenerator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from modelplatform.base import model_config
from modelplatform.base.access.scope import check_first_model
from modelplatform.base.deadlines import deadline_for
from modelplatform.base.errors import DecoupledModel, ModelExecutionError, ModelPlatformError
from modelplatform.base.inference import InferenceRequest, InferenceResponse
from modelplatform.base.model_config import ModelConfig, TensorSpec
from modelplatform.base.observing import RequestObserver
from modelplatform.dataplane.calls import Call, CountedChunks, failure_reason, record_failure
from modelplatform.dataplane.draining import Drain, ServerShuttingDown
from modelplatform.models import IndexEntry, LoadOverride, ModelManager, ModelVersion
from modelplatform.models.backend import RawResponse
from modelplatform.models.stats import ModelStats
from modelplatform.models.streams import closing_stream
from modelplatform.models.views import VersionInfo

#: A load's replacement configuration: Triton's JSON form, as a document or its text.
ConfigJson = Mapping[str, Any] | str


@dataclass(frozen=True, slots=True)
class TensorMetadata:
    name: str
    datatype: str
    shape: list[int]


@dataclass(frozen=True, slots=True)
class ModelMetadata:
    name: str
    versions: list[str]
    platform: str
    inputs: list[TensorMetadata]
    outputs: list[TensorMetadata]


class Siblings(Protocol):
    async def statistics(self, name: str, version: str, refused: bool = False) -> list[list[ModelStats]]:
        """Every other worker's local statistics for the same query."""
        ...


class DataPlane:
    def __init__(
        self,
        models: ModelManager,
        server_name: str,
        server_version: str,
        extensions: list[str],
        siblings: Siblings | None = None,
    ) -> None:
        #: Private: plugins see models only through the views the methods below return.
        self._models = models
        self.server_name = server_name
        self.server_version = server_version
        #: Filled once at start-up from every loaded plugin; never mutated afterwards.
        self.extensions = extensions
        self.live = True
        self.accepting = False
        #: Why the server should look not-ready while still serving (a plugin's
        #: drain switch, e.g. grps ``offline``); ready() is false while non-empty.
        self.drain_reasons: set[str] = set()
        #: The other workers of ``--workers N`` (cluster.SiblingLink), else None.
        self.siblings = siblings
        #: The shutdown drain (draining.py): readiness turns false at its start, and
        #: the calls below are counted in flight so its end can answer them UNAVAILABLE.
        self.drain = Drain()
        #: Told of every counted request when it ends (a tracer); plugins add theirs at start-up.
        self.observers: list[RequestObserver] = []

    def ready(self) -> bool:
        return (
            self.live
            and self.accepting
            and not self.drain.started
            and not self.drain_reasons
            and self._models.all_requested_ready()
        )

    def model_ready(self, name: str, version: str = "") -> bool:
        return not self.drain.started and self._models.is_ready(name, version)

    def server_metadata(self) -> dict[str, Any]:
        return {
            "name": self.server_name,
            "version": self.server_version,
            "extensions": list(self.extensions),
        }

    def model_config(self, name: str, version: str = "") -> ModelConfig:
        return self._models.get(name, version).config

    def model_metadata(self, name: str, version: str = "") -> ModelMetadata:
        chosen = self._models.get(name, version)
        config = chosen.config
        ready = [v.version_str for v in self._models.versions(name) if v.ready]
        return ModelMetadata(
            name=name,
            versions=[chosen.version_str] if version else ready,
            platform=_platform(config),
            inputs=[_tensor_metadata(s, config) for s in config.inputs],
            outputs=[_tensor_metadata(s, config) for s in config.outputs],
        )

    # ---- versions ----

    def resolve(self, name: str, version: str = "") -> VersionInfo:
        """The READY version a request names: ``version``, or the newest READY one when "".

        Raises what :meth:`infer` would: ModelNotFound when nothing READY
        answers (unknown, never loaded, unloaded, failed), ModelNotReady only
        while the model's first load runs, InvalidArgument for a version that
        is not a number. Dialects with
        version labels (TF Serving) turn the label into a number first.
        """
        return _info(self._models.get(name, version))

    def version_status(self, name: str) -> list[VersionInfo]:
        """Every version of ``name`` the server knows, oldest first, READY or not; [] if none."""
        return [_info(v) for v in self._models.versions(name)]

    # ---- the repository ----

    def index(self, ready_only: bool = False) -> list[IndexEntry]:
        """Models on disk and loaded, by name; one never loaded has an entry with only a name."""
        return self._models.index(ready_only)

    async def repository_index(self, ready_only: bool = False) -> list[IndexEntry]:
        """:meth:`index` as the repository holds it now: a remote repository (``s3://``...)
        is listed (one bounded listing per call, see RemoteListing), not its local mirror.

        The repository extension's index calls this; raises ``Unavailable``
        naming the URL when the store cannot be listed in time.
        """
        return await self._models.repository_index(ready_only)

    def repository_config(self, name: str) -> ModelConfig | None:
        """``name``'s configuration as its repository folder declares it, loaded or not.

        For start-up decisions (a dialect's custom routes), not for requests:
        it reads the file. None when the repository has no folder ``name``;
        InvalidArgument when its config.pbtxt does not parse.
        """
        model_dir = self._models.root / name
        if not name or name != Path(name).name or name.startswith(".") or not model_dir.is_dir():
            return None
        return model_config.read_config(model_dir)

    async def load(
        self,
        name: str,
        config: ConfigJson | None = None,
        *,
        model_dir: Path | None = None,
        temporary: bool = False,
    ) -> None:
        """Load or reload ``name``; raises with the reason when it does not load.

        ``config`` replaces the repository's configuration (Triton's JSON form;
        an override without backend or platform keeps the folder's). ``model_dir``
        loads from that folder instead of the repository's; ``temporary`` hands
        the folder over to be deleted once nothing loaded from it is left (also
        when this call fails). With ``--workers N`` every worker loads it.
        """
        try:
            override = LoadOverride.from_json(config, model_dir, temporary)
        except ModelPlatformError:
            if temporary and model_dir is not None:
                await asyncio.to_thread(shutil.rmtree, model_dir, True)
            raise
        await self._models.load(name, override)

    async def unload(self, name: str, *, unload_dependents: bool = False) -> None:
        """Unload every version of ``name`` once its requests in flight have finished.

        ``unload_dependents`` unloads the ensembles whose steps call ``name``
        first; without it their requests in flight finish before ``name`` goes.
        """
        await self._models.unload(name, dependents=unload_dependents)

    # ---- statistics ----

    async def statistics(self, name: str = "", version: str = "") -> list[ModelStats]:
        """Counters of every READY version: of all models, of one model, or of one version.

        With ``--workers N`` they are the sums over every worker (a client's
        reads may land on any of them), asked through the cluster channel.
        """
        local = self.local_statistics(name, version)
        if self.siblings is None:
            return local
        totals = {(s.name, s.version): s for s in local}
        for part in await self.siblings.statistics(name, version):
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
        if self.siblings is not None:
            for part in await self.siblings.statistics("", "", refused=True):
                for stats in part:
                    key = (stats.name, stats.version)
                    totals[key] = totals[key].plus(stats) if key in totals else stats
        return list(totals.values())

    def local_statistics(self, name: str = "", version: str = "", refused: bool = False) -> list[ModelStats]:
        """This process's counters only (see :meth:`statistics`); ``refused`` adds the
        refused requests' counters (all models only: see :meth:`all_statistics`)."""
        if version:
            return _stats_of([self._models.get(name, version)])
        names = [name] if name else self._models.names()
        found = _stats_of([v for n in names for v in self._models.versions(n) if v.ready])
        if name and not found:
            self._models.get(name)  # raises the same not-found/not-ready error as infer
        if refused and not name:
            found += self._models.model_counters.values()
        return found

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        """Validate, schedule, and shape the response for one request."""
        check_first_model(request.model_name)  # a key limited to models, on a call naming it late
        started = request.arrived_ns = time.perf_counter_ns()
        try:
            model = self._models.get(request.model_name, request.model_version)
        except ModelPlatformError:
            self._count_refused(request.model_name, started)
            raise
        stats = model.stats
        # The hot path: model.request() and Call.failures_counted() spelled out inline,
        # since generator context managers cost more than the rest of this method.
        task = self.drain.enter()
        model.enter()
        scheduled = False
        try:
            model.rules.check(request)
            if model.config.decoupled:  # its responses need a streaming call
                raise DecoupledModel(request.model_name)
            request.deadline = deadline_for(request.parameters, model.config.dynamic_batching)
            scheduled = True
            response = await model.scheduler.submit(request)  # type: ignore[union-attr]  # a READY version has its scheduler
        except asyncio.CancelledError:
            if not self.drain.ended(task):
                if stats is not None:  # the client left: Triton's CANCELED, nothing to log
                    stats.record_failure(time.perf_counter_ns() - started, "CANCELED")
                raise
            failure: ModelPlatformError = ServerShuttingDown()
            record_failure(request.model_name, request.model_version, stats, started, failure, "CANCELED")
            raise failure from None
        except ModelPlatformError as error:
            reason = failure_reason(error, scheduled)
            record_failure(request.model_name, request.model_version, stats, started, error, reason)
            raise
        except Exception as error:
            failure = ModelExecutionError(request.model_name, error)
            record_failure(request.model_name, request.model_version, stats, started, failure, "BACKEND")
            raise failure from error
        finally:
            model.leave()
            self.drain.leave(task)
        rows = request.inputs[0].shape[0] if model.config.batching else 1
        stats.record_success(time.perf_counter_ns() - started, 0, rows)  # type: ignore[union-attr]  # the hot path keeps one check: stats exist once READY
        return _finish(response, request, model)

    def count_refused(self, name: str, protocol: str = "") -> None:
        """A request a dialect refused before asking the dataplane (a body it could not
        decode, a model it resolved itself): one failure OTHER, under ``name`` when the
        server knows it, else under ""; ``protocol`` when no request scope is set."""
        self._models.counters_of(name).record_failure(0, "OTHER", protocol)

    def _count_refused(self, name: str, started: int) -> None:
        """A request no READY version answered: counted in its model's own counters when
        the server knows that name, else under "" (clients must not create label values)."""
        counters = self._models.counters_of(name)
        counters.record_failure(time.perf_counter_ns() - started, "OTHER")

    async def stream(self, request: InferenceRequest) -> AsyncGenerator[InferenceResponse, None]:
        """Validate, then yield every response of a streaming (decoupled or generator) model.

        Each stream takes the model's instances in turn and counts in flight
        until it ends, so an unload waits for it. Errors before or during the
        stream are raised from the iteration; closing the iterator early
        (client gone) closes the backend's stream too and counts nothing.
        A model whose instances do not stream answers through :meth:`infer`
        (its scheduler, its batching): one response, marked ``final``.
        """
        check_first_model(request.model_name)
        model = self._models.get(request.model_name, request.model_version)
        if not _streams(model):
            response = await self.infer(request)
            response.final = True
            yield response
            return
        task = self.drain.enter()
        call = Call(model, request.model_name, request.model_version)
        try:
            with call.failures_counted(), self._ended_as_unavailable(task):
                model.rules.check(request)
                # aclosing: a consumer that stops early stops the backend now, not at GC.
                async with closing_stream(call.instance.stream(request)) as responses:
                    async for response in responses:
                        yield _finish(response, request, model)
            call.succeeded()
        finally:
            call.release()
            self.drain.leave(task)

    async def call_raw(self, name: str, version: str, body: bytes, headers: Mapping[str, str]) -> RawResponse:
        """Hand a request in the model's own wire format to an instance (custom routes).

        Counted like :meth:`infer`: in flight until answered (a streamed body:
        until its chunks end or it is closed, so close it), then as a success
        or a failure in the model's statistics. Instances take turns.
        """
        check_first_model(name)
        model = self._models.get(name, version)
        task = self.drain.enter()
        call = Call(model, name, version)
        try:
            with call.failures_counted(), self._ended_as_unavailable(task):
                raw = await call.instance.handle_raw(body, headers)
        except BaseException:
            call.release()  # e.g. cancelled: no longer in flight, counted as nothing
            raise
        finally:
            self.drain.leave(task)
        if isinstance(raw.body, (bytes, bytearray, memoryview)):
            call.succeeded()
            return raw
        return RawResponse(CountedChunks(raw.body, call), raw.content_type, raw.status)

    @contextlib.contextmanager
    def _ended_as_unavailable(self, task: asyncio.Task[object] | None) -> Iterator[None]:
        """A call the drain's end cancelled raises ServerShuttingDown, not CancelledError."""
        try:
            yield
        except asyncio.CancelledError:
            if not self.drain.ended(task):
                raise
            raise ServerShuttingDown() from None


def _finish(response: InferenceResponse, request: InferenceRequest, model: ModelVersion) -> InferenceResponse:
    response.model_name = request.model_name
    response.model_version = model.version_str
    response.id = request.id
    if request.outputs is not None:
        by_name = {t.name: t for t in response.outputs}
        selected = []
        for wanted in request.outputs:
            tensor = by_name.get(wanted.name)
            if tensor is not None:
                tensor.parameters = {**tensor.parameters, **wanted.parameters}
                selected.append(tensor)
        response.outputs = selected
    return response


def _streams(model: ModelVersion) -> bool:
    """Whether a stream to ``model`` may get several responses (see ``Backend.streams``)."""
    return model.config.decoupled or any(instance.streams for instance in model.instances[:1])


def _info(version: ModelVersion) -> VersionInfo:
    return VersionInfo(
        version.name,
        version.version_str,
        version.state.value,
        version.config,
        version.reason,
        _streams(version),
    )


def _stats_of(versions: list[ModelVersion]) -> list[ModelStats]:
    found = [v for v in versions if v.stats is not None]
    for version in found:
        version.stats.pending = version.in_flight  # type: ignore[union-attr]  # a gauge, read now
    return [v.stats for v in found]  # type: ignore[misc]  # found holds only versions with stats


def _platform(config: ModelConfig) -> str:
    return config.platform or config.backend


def _tensor_metadata(spec: TensorSpec, config: ModelConfig) -> TensorMetadata:
    return TensorMetadata(spec.name, spec.datatype, spec.full_shape(config.max_batch_size))
