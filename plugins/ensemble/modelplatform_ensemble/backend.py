"""The ``ensemble`` backend: Triton's ``platform: "ensemble"``.

Loading checks the wiring (graph.py), then the composing models: a step
model that is not loaded is loaded now, as Triton loads an ensemble's
composing models with it in explicit mode; one that does not load (or is not
in the repository) fails the ensemble's load, naming the step. ``execute``
runs every request of the batch through the engine concurrently; the core
gives this backend the concurrent scheduler (``concurrent = True``), so
ensemble requests never wait for one another, only for their steps' models.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import ClassVar

import structlog

from modelplatform import (
    Backend,
    DataPlane,
    EnsembleStep,
    ExecuteResult,
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    ModelExecutionError,
    ModelPlatformError,
    Unavailable,
)

from .engine import Pipeline
from .graph import check_step_model, step_name, wiring

log = structlog.get_logger("modelplatform_ensemble")


class EnsembleBackend(Backend):
    kind: ClassVar[str] = "ensemble"
    platforms: ClassVar[tuple[str, ...]] = ("ensemble",)
    concurrent: ClassVar[bool] = True

    _pipeline: Pipeline | None = None

    async def load(self) -> None:
        if self.dataplane is None:
            raise Unavailable(f"ensemble '{self.config.name}' needs the server's DataPlane")
        if self.config.dynamic_batching is not None:
            raise InvalidArgument(
                f"ensemble '{self.config.name}': dynamic_batching is not allowed; "
                "its steps' models batch on their own"
            )
        graph = wiring(self.config)
        for index, step in enumerate(graph.steps):
            await self._check_step(self.dataplane, index, step)
        self._pipeline = Pipeline(self.config, graph, self.dataplane)

    async def _check_step(self, dataplane: DataPlane, index: int, step: EnsembleStep) -> None:
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

    async def unload(self) -> None:
        self._pipeline = None

