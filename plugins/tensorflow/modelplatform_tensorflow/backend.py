"""The ``tensorflow`` backend: a SavedModel's signatures as one model.

Where the SavedModel lies in a version folder:

- Triton's layout: ``<version>/model.savedmodel/`` (or ``default_model_filename``);
- TF Serving's: ``<version>/saved_model.pb`` + ``variables/``, served as is.

TensorFlow is imported in :meth:`load` (it takes seconds and much memory), so
the plugin imports without it. A request's input names pick the signature
(completion.py names them); its arrays go to the signature's function as
TensorFlow tensors, on a worker thread: TensorFlow releases the GIL while it
computes, so the event loop keeps serving. The dynamic batcher's requests run
as one call when they send the same inputs (so the same signature), ask for
the same outputs and fit ``max_batch_size`` together (``modelplatform.batching``);
each runs alone otherwise, and when the joined call fails, so a bad request
fails by itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
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

from . import availability, completion, signature_defs
from .completion import Routing

log = structlog.get_logger("modelplatform_tensorflow")

SAVEDMODEL_FOLDER = "model.savedmodel"


class TensorFlowBackend(Backend):
    kind: ClassVar[str] = "tensorflow"
    platforms: ClassVar[tuple[str, ...]] = (completion.PLATFORM,)
    #: Triton's layout, then TF Serving's (a version folder that is itself the SavedModel).
    model_files: ClassVar[tuple[str, ...]] = (
        f"{SAVEDMODEL_FOLDER}/{signature_defs.SAVED_MODEL_FILE}",
        signature_defs.SAVED_MODEL_FILE,
    )

    _loaded: Any = None
    #: The served signatures' functions by name, and how tensor names reach them (set by load()).
    _functions: dict[str, Any]
    _routing: Routing

    @classmethod
    def unavailable_reason(cls) -> str | None:
        return availability.unavailable_reason()

    async def load(self) -> None:
        export_dir, as_is = self._export_dir()
        tag = self.config.parameters.get(completion.GRAPH_TAG_PARAMETER, "")
        found = await asyncio.to_thread(signature_defs.read, self.config.name, export_dir, tag)
        self.config, self._routing = completion.complete(self.config, found, served_as_is=as_is)
        self._loaded = await asyncio.to_thread(_load_saved_model, self.config.name, export_dir, found.tags)
        served = {r.signature for r in self._routing.inputs.values()} | set(self._routing.outputs)
        self._functions = {name: self._loaded.signatures[name] for name in served}
        log.info(
            "savedmodel_loaded",
            model=self.config.name,
            instance=self.instance_index,
            signatures=sorted(served),
            primary=self._routing.primary,
            layout="tfserving" if as_is else "triton",
        )

    def _export_dir(self) -> tuple[Path, bool]:
        """The SavedModel's folder, and whether it is the version folder itself (TF Serving's layout)."""
        if (self.version_dir / signature_defs.SAVED_MODEL_FILE).is_file():
            return self.version_dir, True
        folder = self.version_dir / (self.config.default_model_filename or SAVEDMODEL_FOLDER)
        if not (folder / signature_defs.SAVED_MODEL_FILE).is_file():
            raise InvalidArgument(
                f"model '{self.config.name}': no SavedModel in {self.version_dir} "
                f"(looked for {SAVEDMODEL_FOLDER}/ and {signature_defs.SAVED_MODEL_FILE})"
            )
        return folder, False

    async def unload(self) -> None:
        self._functions, self._loaded = {}, None  # TensorFlow frees them with their last reference

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        if joinable(batch, self.config.max_batch_size):
            merged = await self._execute_merged(batch)
            if merged is not None:
                return merged
        return [await self._execute_one(request) for request in batch]

    async def _execute_merged(self, batch: Sequence[InferenceRequest]) -> ExecuteResult | None:
        """One call for the whole batch; None when it failed (each request then runs alone)."""
        try:
            arrays = await self._run(batch[0], join_inputs(batch))
            parts = split_outputs(arrays, [rows(r) for r in batch])
        except Exception as error:  # noqa: BLE001 - retried one by one below
            log.warning("merged_run_failed", model=self.config.name, reason=str(error))
            return None
        return [self._response(r, part) for r, part in zip(batch, parts)]

    async def _execute_one(self, request: InferenceRequest) -> InferenceResponse | ModelPlatformError:
        try:
            arrays = await self._run(request, {t.name: t.data for t in request.inputs})
            return self._response(request, arrays)
        except ModelPlatformError as error:
            return error
        except Exception as error:  # noqa: BLE001 - a failed run fails its own request only
            return _as_error(self.config.name, error)

    async def _run(self, request: InferenceRequest, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The signature the inputs name, run; its outputs by configured name (those asked for)."""
        signature = self._signature_of(request)
        routes = self._routing.inputs
        function = self._functions[signature]
        self.phases.inputs_ready()
        results = await asyncio.to_thread(_call, function, {routes[n].alias: a for n, a in feeds.items()})
        self.phases.outputs_started()
        names = self._routing.outputs[signature]
        wanted = None if request.outputs is None else {o.name for o in request.outputs}
        if wanted is not None and not wanted <= set(names.values()):
            raise InvalidArgument(
                f"model '{self.config.name}': output(s) {sorted(wanted - set(names.values()))} "
                f"are not outputs of signature '{signature}'"
            )
        return {
            names[alias]: value
            for alias, value in results.items()
            if wanted is None or names[alias] in wanted
        }

    def _signature_of(self, request: InferenceRequest) -> str:
        routes = self._routing.inputs
        chosen = {routes[t.name].signature for t in request.inputs}
        if len(chosen) > 1:
            raise InvalidArgument(
                f"model '{self.config.name}': inputs {[t.name for t in request.inputs]} "
                f"belong to different signatures {sorted(chosen)}"
            )
        signature = chosen.pop() if chosen else self._routing.primary
        missing = self._routing.input_aliases(signature) - {routes[t.name].alias for t in request.inputs}
        if missing:
            raise InvalidArgument(
                f"model '{self.config.name}': signature '{signature}' needs input(s) {sorted(missing)}"
            )
        return signature

    def _response(self, request: InferenceRequest, arrays: dict[str, np.ndarray]) -> InferenceResponse:
        tensors = [self._tensor(name, array) for name, array in arrays.items()]
        return InferenceResponse(request.model_name, request.model_version, tensors, id=request.id)

    def _tensor(self, name: str, array: np.ndarray) -> Tensor:
        if array.dtype.kind in ("U", "S", "O"):
            return Tensor(name, "BYTES", tuple(array.shape), as_bytes_array(array))
        spec = self.config.output_spec(name)
        return Tensor.from_array(name, array, spec.datatype if spec else None)


def _load_saved_model(model: str, export_dir: Path, tags: Sequence[str]) -> Any:
    import tensorflow as tf  # heavy: only when a model loads

    try:
        return tf.saved_model.load(str(export_dir), tags=list(tags) or None)
    except Exception as error:  # noqa: BLE001 - TensorFlow raises many types for a bad export
        raise InvalidArgument(f"model '{model}': TensorFlow could not load {export_dir}: {error}") from None


def _call(function: Any, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One signature call; numpy in and out (strings stay bytes)."""
    import tensorflow as tf  # already imported by load(): a dictionary lookup

    tensors = {alias: tf.convert_to_tensor(array) for alias, array in feeds.items()}
    return {alias: value.numpy() for alias, value in function(**tensors).items()}


def _as_error(model: str, error: Exception) -> ModelPlatformError:
    """TensorFlow's InvalidArgumentError (a bad shape or value) is the client's fault."""
    if type(error).__name__ in ("InvalidArgumentError", "ValueError", "TypeError"):
        return InvalidArgument(f"model '{model}': {_first_line(error)}")
    return ModelExecutionError(model, error)


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
