"""The ``ensemble`` backend: Triton's ``platform: "ensemble"``.

Loading checks the wiring (graph.py), then the composing models: a step
model that is not loaded is loaded now, as Triton loads an ensemble's
composing models with it in explicit mode; one that does not load (or is not
in the repository) fails the ensemble's load, naming the step. ``execute``
runs every request of the batch through the engine concurrently; the core
gives this backend the concurrent scheduler (``concurrent = True``), so
ensemble requests never wait for one another, only for their steps' models.

An ensemble with a step model that streams (decoupled, or a generator)
streams too: ``stream`` answers once per answer of those steps. As Triton
fills in an ensemble's transaction policy, one with a decoupled step model
is decoupled itself (its config says so, and unary calls are refused).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import ClassVar

import structlog

from modelplatform import (
    Backend,
    EnsembleStep,
    ExecuteResult,
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    ModelConfig,
    ModelExecutionError,
    ModelPlatformError,
    ServerCalls,
    Unavailable,
    VersionInfo,
)

from .engine import Pipeline
from .graph import check_step_model, step_name, wiring

log = structlog.get_logger("modelplatform_ensemble")


class EnsembleBackend(Backend):
    kind: ClassVar[str] = "ensemble"
    platforms: ClassVar[tuple[str, ...]] = ("ensemble",)
    concurrent: ClassVar[bool] = True

    _pipeline: Pipeline | None = None
    #: Whether some step model streams (set at load): then so does the ensemble.
    _streams: bool = False

    async def load(self) -> None:
        if self.dataplane is None:
            raise Unavailable(f"ensemble '{self.config.name}' needs the server's DataPlane")
        if self.config.dynamic_batching is not None:
            raise InvalidArgument(
                f"ensemble '{self.config.name}': dynamic_batching is not allowed; "
                "its steps' models batch on their own"
            )
        graph = wiring(self.config)
        found = [
            await self._check_step(self.dataplane, index, step) for index, step in enumerate(graph.steps)
        ]
        streaming = frozenset(index for index, model in enumerate(found) if model.streams)
        if any(model.config.decoupled for model in found) and not self.config.decoupled:
            self.config = _decoupled(self.config)
        self._streams = bool(streaming)
        self._pipeline = Pipeline(self.config, graph, self.dataplane, streaming)

    @property
    def streams(self) -> bool:
        return self._streams

    async def _check_step(self, dataplane: ServerCalls, index: int, step: EnsembleStep) -> VersionInfo:
        """The step's model is READY (loaded now if need be) and its maps fit the model."""
        where = f"ensemble '{self.config.name}' {step_name(index, step)}"
        name, version = step.model_name, step.model_version
        if name == self.config.name:
            raise InvalidArgument(f"{where}: an ensemble cannot call itself")
        try:
            if not dataplane.model_ready(name):
                log.info("ensemble_step_model_loading", ensemble=self.config.name, model=name)
                await dataplane.load(name)
            found = dataplane.resolve(name, "" if version < 0 else str(version))
        except ModelPlatformError as error:
            raise InvalidArgument(f"{where}: model '{name}' is not available: {error}") from None
        check_step_model(self.config.name, index, step, found.config)
        return found

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        if len(batch) == 1:  # the concurrent scheduler's only case
            return [await self._answer(batch[0])]
        return list(await asyncio.gather(*(self._answer(r) for r in batch)))

    async def _answer(self, request: InferenceRequest) -> InferenceResponse | ModelPlatformError:
        if self._pipeline is None:
            return Unavailable(f"ensemble '{self.config.name}' is not loaded")
        try:
            return await self._pipeline.run(request)
        except ModelPlatformError as error:
            return error
        except Exception as error:  # noqa: BLE001 - fails this request alone
            return ModelExecutionError(self.config.name, error)

    async def stream(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        if self._pipeline is None:
            raise Unavailable(f"ensemble '{self.config.name}' is not loaded")
        async with contextlib.aclosing(self._pipeline.stream(request)) as responses:
            async for response in responses:
                yield response

    async def unload(self) -> None:
        self._pipeline = None


def _decoupled(config: ModelConfig) -> ModelConfig:
    """``config`` with Triton's decoupled transaction policy (its JSON says so too)."""
    document = config.to_json()
    document["model_transaction_policy"] = {"decoupled": True}
    return ModelConfig.from_json(document)
