"""The one path every protocol calls: health, metadata, configuration, infer.

Dialects decode their wire format into an InferenceRequest, call
:meth:`DataPlane.infer`, and encode the InferenceResponse; they never touch
models or backends directly. Everything here is a dict lookup or a check
against an already-frozen ModelConfig: nothing is parsed per request.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from .errors import ModelExecutionError, ModelPlatformError
from .inference import InferenceRequest, InferenceResponse
from .model_config import ModelConfig, TensorSpec
from .models import ModelManager, ModelVersion
from .stats import ModelStats
from .validation import validate_request

log = structlog.get_logger("modelplatform.dataplane")


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
    async def statistics(self, name: str, version: str) -> list[list[ModelStats]]:
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
        self.models = models
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

    def ready(self) -> bool:
        return (
            self.live
            and self.accepting
            and not self.drain_reasons
            and self.models.all_requested_ready()
        )

    def model_ready(self, name: str, version: str = "") -> bool:
        return self.models.is_ready(name, version)

    def server_metadata(self) -> dict[str, Any]:
        return {
            "name": self.server_name,
            "version": self.server_version,
            "extensions": list(self.extensions),
        }

    def model_config(self, name: str, version: str = "") -> ModelConfig:
        return self.models.get(name, version).config

    def model_metadata(self, name: str, version: str = "") -> ModelMetadata:
        chosen = self.models.get(name, version)
        config = chosen.config
        ready = [v.version_str for v in self.models.versions(name) if v.ready]
        return ModelMetadata(
            name=name,
            versions=[chosen.version_str] if version else ready,
            platform=_platform(config),
            inputs=[_tensor_metadata(s, config) for s in config.inputs],
            outputs=[_tensor_metadata(s, config) for s in config.outputs],
        )

    def model_version(self, name: str, version: str = "") -> ModelVersion:
        return self.models.get(name, version)

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

    def local_statistics(self, name: str = "", version: str = "") -> list[ModelStats]:
        """This process's counters only (see :meth:`statistics`)."""
        if version:
            return _stats_of([self.models.get(name, version)])
        names = [name] if name else self.models.names()
        found = _stats_of([v for n in names for v in self.models.versions(n) if v.ready])
        if name and not found:
            self.models.get(name)  # raises the same not-found/not-ready error as infer
        return found

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        """Validate, schedule, and shape the response for one request."""
        model = self.models.get(request.model_name, request.model_version)
        stats = model.stats
        started = time.perf_counter_ns()
        # The hot path: model.request() and _failures_counted() spelled out inline,
        # since generator context managers cost more than the rest of this method.
        model.enter()
        try:
            validate_request(request, model.config)
            response = await model.scheduler.submit(request)  # type: ignore[union-attr]
        except ModelPlatformError as error:
            _record_failure(request, stats, started, error)
            raise
        except Exception as error:
            failure = ModelExecutionError(request.model_name, error)
            _record_failure(request, stats, started, failure)
            raise failure from error
        finally:
            model.leave()
        rows = request.inputs[0].shape[0] if model.config.batching else 1
        stats.record_success(time.perf_counter_ns() - started, 0, rows)  # type: ignore[union-attr]
        return _finish(response, request, model)

    async def stream(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        """Validate, then yield every response of a streaming (generator) model.

        Errors before or during the stream are raised from the iteration; closing
        the iterator early (client gone) closes the backend's stream too.
        """
        model = self.models.get(request.model_name, request.model_version)
        stats = model.stats
        started = time.perf_counter_ns()
        with model.request(), _failures_counted(request, stats, started):
            validate_request(request, model.config)
            # aclosing: a consumer that stops early stops the backend now, not at GC.
            async with contextlib.aclosing(model.instances[0].stream(request)) as responses:
                async for response in responses:
                    yield _finish(response, request, model)
        stats.record_success(time.perf_counter_ns() - started)  # type: ignore[union-attr]


@contextlib.contextmanager
def _failures_counted(
    request: InferenceRequest, stats: ModelStats | None, started: int
) -> Iterator[None]:
    """Count and log a failed request; anything not ours becomes ModelExecutionError."""
    try:
        yield
    except ModelPlatformError as error:
        _record_failure(request, stats, started, error)
        raise
    except Exception as error:
        failure = ModelExecutionError(request.model_name, error)
        _record_failure(request, stats, started, failure)
        raise failure from error


def _record_failure(
    request: InferenceRequest, stats: ModelStats | None, started: int, error: ModelPlatformError
) -> None:
    if stats is not None:
        stats.record_failure(time.perf_counter_ns() - started)
    # Messages name tensors and shapes, never their contents.
    log.info(
        "request_failed",
        model=request.model_name,
        version=request.model_version,
        code=error.code.value,
        error=error.message,
    )
    error.logged = True


def _finish(
    response: InferenceResponse, request: InferenceRequest, model: ModelVersion
) -> InferenceResponse:
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


def _stats_of(versions: list[ModelVersion]) -> list[ModelStats]:
    return [v.stats for v in versions if v.stats is not None]


def _platform(config: ModelConfig) -> str:
    return config.platform or config.backend


def _tensor_metadata(spec: TensorSpec, config: ModelConfig) -> TensorMetadata:
    return TensorMetadata(spec.name, spec.datatype, spec.full_shape(config.max_batch_size))
