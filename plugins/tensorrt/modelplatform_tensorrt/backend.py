"""The ``tensorrt`` backend: ``<version>/model.plan`` on an NVIDIA GPU.

Each ``instance_group`` instance owns one :class:`TrtEngine` (its own
execution context, CUDA stream and buffers), so N instances run N requests
at once. GPU work runs in a worker thread; an instance runs one request at a
time (its buffers are reused), guarded by a lock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import structlog

from modelplatform import (
    Backend,
    ExecuteResult,
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    ModelExecutionError,
    ModelPlatformError,
    Tensor,
    Unavailable,
)

from . import availability, checks, shapes
from .engine import TrtEngine

log = structlog.get_logger("modelplatform_tensorrt")

MODEL_FILE = "model.plan"


class TensorRTBackend(Backend):
    kind: ClassVar[str] = "tensorrt"
    platforms: ClassVar[tuple[str, ...]] = ("tensorrt_plan",)
    model_files: ClassVar[tuple[str, ...]] = (MODEL_FILE,)

    _engine: TrtEngine | None = None

    @classmethod
    def unavailable_reason(cls) -> str | None:
        return availability.unavailable_reason()

    async def load(self) -> None:
        reason = availability.unavailable_reason()
        if reason:
            raise Unavailable(f"model '{self.config.name}': tensorrt backend unavailable: {reason}")
        path = self.version_dir / (self.config.default_model_filename or MODEL_FILE)
        if not path.is_file():
            raise InvalidArgument(f"model '{self.config.name}': {path} does not exist")
        self._lock = asyncio.Lock()
        engine = await asyncio.to_thread(TrtEngine.open, self.config.name, path, self._device())
        try:
            self.config = checks.complete(self.config, engine.info)
        except BaseException:
            await asyncio.to_thread(engine.close)  # a half-failed load leaves nothing on the GPU
            raise
        self._engine = engine
        log.info(
            "tensorrt_engine_loaded",
            model=self.config.name,
            instance=self.instance_index,
            profiles=engine.info.num_profiles,
        )

    async def unload(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            await asyncio.to_thread(engine.close)

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        return [await self._execute_one(request) for request in batch]

    async def _execute_one(self, request: InferenceRequest) -> InferenceResponse | ModelPlatformError:
        engine = self._engine
        if engine is None:
            return Unavailable(f"model '{self.config.name}' is not loaded")
        try:
            feeds = {t.name: np.ascontiguousarray(t.data) for t in request.inputs}
            shaped = {name: tuple(array.shape) for name, array in feeds.items()}
            async with self._lock:
                profile = shapes.choose_profile(self.config.name, engine.info, shaped, engine.profile)
                arrays = await asyncio.to_thread(engine.infer, feeds, profile, self._output_names(request))
        except ModelPlatformError as error:
            return error
        except Exception as error:  # noqa: BLE001 - a failed run fails its own request only
            return ModelExecutionError(self.config.name, error)
        tensors = [Tensor.from_array(n, a, self._datatype(n)) for n, a in arrays.items()]
        return InferenceResponse(request.model_name, request.model_version, tensors, id=request.id)

    def _output_names(self, request: InferenceRequest) -> list[str]:
        if request.outputs is None:
            return [spec.name for spec in self.config.outputs]
        return [output.name for output in request.outputs]

    def _datatype(self, name: str) -> str | None:
        spec = self.config.output_spec(name)
        return spec.datatype if spec else None

    def _device(self) -> int:
        """This instance's GPU: instance_group ``gpus`` round-robin within its group, else 0."""
        devices = []
        for group in self.config.instance_group:
            gpus = list(group.gpus) or [0]
            devices += [gpus[i % len(gpus)] for i in range(group.count)]
        return devices[self.instance_index] if self.instance_index < len(devices) else 0
