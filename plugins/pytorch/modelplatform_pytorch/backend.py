"""The ``pytorch`` backend: ``<version>/model.pt`` (TorchScript) on the CPU or a CUDA GPU.

Triton's ``backend: "pytorch"`` / ``platform: "pytorch_libtorch"``. torch is
imported in :meth:`load` (through ``engine``), so this plugin imports on a
machine without it. Each ``instance_group`` instance owns its own module on
its own device (placement.py) and runs one execute at a time in a worker
thread; the dynamic batcher's requests run as one forward when they carry the
same inputs and fit ``max_batch_size`` together (``modelplatform.batching``;
the forward computes every output any of them asked for, and the engine joins
their pieces on the device), each alone otherwise and when that forward fails.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import structlog

from modelplatform import (
    Backend,
    DeviceArray,
    ExecuteResult,
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    ModelConfig,
    ModelExecutionError,
    ModelPlatformError,
    Tensor,
    Unavailable,
)
from modelplatform.batching import joinable, rows, split_outputs

from . import availability, parameters

if TYPE_CHECKING:
    from .engine import TorchModel

log = structlog.get_logger("modelplatform_pytorch")

MODEL_FILE = "model.pt"


class PyTorchBackend(Backend):
    kind: ClassVar[str] = "pytorch"
    platforms: ClassVar[tuple[str, ...]] = ("pytorch_libtorch",)
    model_files: ClassVar[tuple[str, ...]] = (MODEL_FILE,)
    #: Inputs in a client's CUDA shared memory are mapped into torch without a copy, and an
    #: output bound to a CUDA window is written there on the device (requests run alone).
    accepts_device_memory: ClassVar[bool] = True

    _model: TorchModel | None = None

    @classmethod
    def unavailable_reason(cls) -> str | None:
        return availability.unavailable_reason()

    async def load(self) -> None:
        reason = availability.unavailable_reason()
        if reason:
            raise Unavailable(f"model '{self.config.name}': pytorch backend unavailable: {reason}")
        settings = parameters.parse(self.config.name, self.config.parameters)
        path = self.version_dir / (self.config.default_model_filename or MODEL_FILE)
        if not path.is_file():
            raise InvalidArgument(f"model '{self.config.name}': {path} does not exist")
        from .engine import TorchModel  # torch: only when a model loads

        self._model = await asyncio.to_thread(
            TorchModel.open, self.config, path, self.instance_index, settings
        )

    async def unload(self) -> None:
        model, self._model = self._model, None
        if model is not None:
            await asyncio.to_thread(model.close)

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        if joinable(batch, self.config.max_batch_size, same_outputs=False):
            merged = await self._execute_merged(batch)
            if merged is not None:
                return merged
        return [await self._execute_one(request) for request in batch]

    async def _execute_merged(self, batch: Sequence[InferenceRequest]) -> ExecuteResult | None:
        """One forward for the whole batch; None when it failed (each request then runs alone)."""
        try:
            arrays = await self._infer(batch, self._wanted(batch))
            parts = split_outputs(arrays, [rows(r) for r in batch])
        except Exception as error:  # noqa: BLE001 - retried one by one below
            log.warning("merged_run_failed", model=self.config.name, reason=str(error))
            return None
        return [self._response(r, part) for r, part in zip(batch, parts)]

    async def _execute_one(self, request: InferenceRequest) -> InferenceResponse | ModelPlatformError:
        windows = {o.name: o.device_destination for o in request.outputs or () if o.device_destination}
        try:
            arrays = await self._infer([request], self._wanted([request]), windows)
            return self._response(request, arrays, windows)
        except ModelPlatformError as error:
            return error
        except Exception as error:  # noqa: BLE001 - a failed run fails its own request only
            return ModelExecutionError(self.config.name, error)

    async def _infer(
        self,
        batch: Sequence[InferenceRequest],
        wanted: dict[str, str],
        windows: dict[str, DeviceArray] | None = None,
    ) -> dict[str, np.ndarray]:
        model = self._model
        if model is None:
            raise Unavailable(f"model '{self.config.name}' is not loaded")
        pieces = {t.name: [_data(request, t.name) for request in batch] for t in batch[0].inputs}
        datatypes = {t.name: t.datatype for t in batch[0].inputs}
        return await asyncio.to_thread(model.infer, pieces, datatypes, wanted, self.phases, windows)

    def _wanted(self, batch: Sequence[InferenceRequest]) -> dict[str, str]:
        """Output name -> configured datatype: what any request of the batch asked for, in config order."""
        if any(request.outputs is None for request in batch):
            names = {spec.name for spec in self.config.outputs}
        else:
            names = {o.name for request in batch for o in request.outputs or ()}
        return {spec.name: spec.datatype for spec in self.config.outputs if spec.name in names}

    def _response(
        self,
        request: InferenceRequest,
        arrays: dict[str, np.ndarray],
        windows: dict[str, DeviceArray] | None = None,
    ) -> InferenceResponse:
        names = [o.name for o in request.outputs] if request.outputs is not None else list(arrays)
        tensors = [Tensor.from_array(name, arrays[name], self._datatype(name)) for name in names]
        for tensor in tensors:  # written into its CUDA window when the array is a stand-in for it
            tensor.device = windows.get(tensor.name) if windows else None
        return InferenceResponse(request.model_name, request.model_version, tensors, id=request.id)

    def _datatype(self, name: str) -> str | None:
        spec = self.config.output_spec(name)
        return spec.datatype if spec else None


def _data(request: InferenceRequest, name: str) -> np.ndarray | DeviceArray:
    """One input's values: in a client's CUDA window when it came in one, else the host array."""
    tensor = request.input(name)
    if tensor is None:
        raise InvalidArgument(f"input '{name}' is missing from a request of the batch")
    return tensor.device if tensor.device is not None else tensor.data


def _open(
    config: ModelConfig, path: Path, instance_index: int, settings: parameters.TorchSettings
) -> TorchModel:
    """In a worker thread: importing torch takes a second or more, and the event loop keeps serving."""
    from .engine import TorchModel  # torch: only when a model loads

    return TorchModel.open(config, path, instance_index, settings)
