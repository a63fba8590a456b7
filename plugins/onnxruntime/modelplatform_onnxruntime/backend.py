"""The ``onnxruntime`` backend: ``<version>/model.onnx`` on ONNX Runtime's CPU provider.

``onnxruntime`` is imported in :meth:`load`, so this plugin imports on a
machine without it. Session runs go to a worker thread: ONNX Runtime
releases the GIL while it computes, so the event loop keeps serving. Each
``instance_group`` instance owns its own session. A request running alone
whose outputs have a destination (a shared-memory window) has them written
there by ONNX Runtime itself where iobinding.py can bind them. The dynamic
batcher's requests run as one session run when they carry the same inputs,
ask for the same outputs and fit ``max_batch_size`` together
(``modelplatform.batching``); each runs alone otherwise, and when the joined
run fails, so a bad request fails by itself.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Sequence
from typing import Any, ClassVar

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
)
from modelplatform.batching import join_inputs, joinable, rows, split_outputs
from modelplatform.datatypes import as_bytes_array

from . import iobinding, options, signature

log = structlog.get_logger("modelplatform_onnxruntime")

MODEL_FILE = "model.onnx"
PROVIDERS = ["CPUExecutionProvider"]


class OnnxRuntimeBackend(Backend):
    kind: ClassVar[str] = "onnxruntime"
    platforms: ClassVar[tuple[str, ...]] = ("onnxruntime_onnx",)
    model_files: ClassVar[tuple[str, ...]] = (MODEL_FILE,)

    _session: Any = None
    _binding: iobinding.BindingPlan = iobinding.BindingPlan({}, frozenset())

    @classmethod
    def unavailable_reason(cls) -> str | None:
        if importlib.util.find_spec("onnxruntime") is None:
            return "onnxruntime is not installed (pip install onnxruntime)"
        return None

    async def load(self) -> None:
        settings = options.parse(self.config.name, self.config.parameters)
        path = self.version_dir / (self.config.default_model_filename or MODEL_FILE)
        if not path.is_file():
            raise InvalidArgument(f"model '{self.config.name}': {path} does not exist")
        try:
            self._session = await asyncio.to_thread(_open_session, str(path), settings)
        except Exception as error:  # noqa: BLE001 - ORT raises its own types for a bad file
            raise InvalidArgument(
                f"model '{self.config.name}': ONNX Runtime could not load {path}: {error}"
            ) from None
        inputs = signature.describe(self.config.name, self._session.get_inputs())
        outputs = signature.describe(self.config.name, self._session.get_outputs())
        self.config = signature.complete(self.config, inputs, outputs)
        self._binding = iobinding.plan(self._session.get_inputs(), self._session.get_outputs())
        log.info(
            "onnx_session_created",
            model=self.config.name,
            instance=self.instance_index,
            intra_op_threads=settings.intra_op_threads,
            graph_level=settings.graph_level,
            bindable_outputs=sorted(self._binding.shapes),
        )

    async def unload(self) -> None:
        self._session = None  # ORT frees the session with its last reference

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        if joinable(batch, self.config.max_batch_size):
            merged = await self._execute_merged(batch)
            if merged is not None:
                return merged
        return [await self._execute_one(request) for request in batch]

    async def _execute_merged(self, batch: Sequence[InferenceRequest]) -> ExecuteResult | None:
        """One run for the whole batch; None when it failed (each request then runs alone)."""
        try:
            names = self._output_names(batch[0])
            arrays = await self._run(names, join_inputs(batch))
            parts = split_outputs(arrays, [rows(r) for r in batch])
        except Exception as error:  # noqa: BLE001 - retried one by one below
            log.warning("merged_run_failed", model=self.config.name, reason=str(error))
            return None
        return [self._response(r, part) for r, part in zip(batch, parts)]

    async def _execute_one(self, request: InferenceRequest) -> InferenceResponse | ModelPlatformError:
        try:
            feeds = {t.name: t.data for t in request.inputs}
            names = self._output_names(request)
            bound = iobinding.targets(request, self._binding, names, feeds)
            arrays = await self._run(names, feeds, bound)
            return self._response(request, arrays)
        except ModelPlatformError as error:
            return error
        except Exception as error:  # noqa: BLE001 - a failed run fails its own request only
            return _as_error(self.config.name, error)

    async def _run(
        self, names: list[str], feeds: dict[str, np.ndarray], bound: dict[str, np.ndarray] | None = None
    ) -> dict[str, np.ndarray]:
        """``bound``: outputs to write into the given arrays (iobinding.targets); the rest are allocated."""
        prepared = {name: _onnx_value(array) for name, array in feeds.items()}
        self.phases.inputs_ready()
        if bound:
            values = await self._run_bound(names, prepared, bound)
        else:
            values = await asyncio.to_thread(self._session.run, names, prepared)
        self.phases.outputs_started()
        return dict(zip(names, values))

    async def _run_bound(
        self, names: list[str], prepared: dict[str, np.ndarray], bound: dict[str, np.ndarray]
    ) -> list[np.ndarray]:
        """A bound run; when it fails (an output shape the graph declared wrongly, a bad input),
        the plain run answers, so binding never changes what a request gets."""
        try:
            return await asyncio.to_thread(iobinding.run_bound, self._session, names, prepared, bound)
        except Exception as error:  # noqa: BLE001 - the plain run below says what is wrong, if anything
            log.info("bound_run_failed", model=self.config.name, reason=str(error))
        return await asyncio.to_thread(self._session.run, names, prepared)

    def _output_names(self, request: InferenceRequest) -> list[str]:
        if request.outputs is None:
            return [spec.name for spec in self.config.outputs]
        return [output.name for output in request.outputs]

    def _response(self, request: InferenceRequest, arrays: dict[str, np.ndarray]) -> InferenceResponse:
        tensors = [self._tensor(name, array) for name, array in arrays.items()]
        return InferenceResponse(request.model_name, request.model_version, tensors, id=request.id)

    def _tensor(self, name: str, array: np.ndarray) -> Tensor:
        spec = self.config.output_spec(name)
        if array.dtype.kind in ("U", "S", "O"):
            return Tensor(name, "BYTES", tuple(array.shape), as_bytes_array(array))
        return Tensor.from_array(name, array, spec.datatype if spec else None)


def _open_session(path: str, settings: options.SessionSettings) -> Any:
    import onnxruntime as ort  # heavy: only when a model loads

    session_options = options.session_options(ort, settings)
    return ort.InferenceSession(path, sess_options=session_options, providers=PROVIDERS)


def _onnx_value(array: np.ndarray) -> np.ndarray:
    """ONNX string tensors take str elements; our BYTES arrays hold bytes."""
    if array.dtype == object:
        return np.vectorize(_text, otypes=[object])(array)
    return np.ascontiguousarray(array)


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _as_error(model: str, error: Exception) -> ModelPlatformError:
    """ONNX Runtime's InvalidArgument (bad shape, bad type) is the client's fault."""
    if type(error).__name__ in ("InvalidArgument", "InvalidGraph"):
        return InvalidArgument(f"model '{model}': {error}")
    return ModelExecutionError(model, error)
