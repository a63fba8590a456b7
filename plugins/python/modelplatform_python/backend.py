"""The ``python`` backend: a ``model.py`` with a ``Model`` class (or a ``TritonPythonModel``).

Contract for ``<model>/<version>/model.py``::

    import numpy as np

    class Model:
        def load(self, config, version_dir, models):  # optional; sync or async
            self.offset = 3.0                          # (takes the first 0-3 arguments)
            self.models = models                       # calls other models (bls.ModelCalls)

        def infer(self, inputs):                       # required; sync or async
            # inputs: dict of input name -> numpy array (BYTES: object array of bytes)
            return {"y": inputs["x"] * 0.5 + self.offset}

        def unload(self):                              # optional; sync or async
            ...

``infer`` returns a dict of output name -> array (lists are converted; str
elements of BYTES outputs become UTF-8). Outputs declared in the model's
configuration are cast to their declared datatype. ``infer`` may instead be
a generator (sync or async) yielding several dicts: such a model streams
(OIP gRPC ModelStreamInfer, generate_stream, grps streaming); over unary
protocols its last yield is the response. An
exception raised by user code fails that request alone, with a clean error;
the server keeps serving. An optional ``http(self, body, headers)`` method
(sync or async) answers a raw request on the model's own route (raw.py).

Each instance runs behind one :class:`~modelplatform_python.runner.Runner`,
chosen once at load; the backend only delegates, with the instance's
:class:`~modelplatform_python.bls.ModelCalls` current while the model's code
runs (bls.bind), so Triton's BLS reaches the server that runs the model:

- :class:`~modelplatform_python.thread_runner.ThreadRunner` (the default):
  the ``Model`` in the server process;
- :class:`~modelplatform_python.process_runner.ProcessRunner` when the model
  parameter ``python.instance_kind`` is ``process``: the ``Model`` in its own
  child process, so pure-Python code runs in parallel;
- :class:`~modelplatform_python.triton_runner.TritonRunner` when ``model.py``
  defines ``TritonPythonModel`` (written for Triton's python backend); its
  ``auto_complete_config`` completes the configuration first (triton_config.py,
  unless ``--disable-auto-complete-config``).

A process instance is bounded by an execute timeout and a memory bound
(limits.py); the server defaults come from ``[plugins.python]``, bound to
the class the plugin registers (:meth:`PythonBackend.with_options`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from modelplatform import (
    Backend,
    ExecuteResult,
    InferenceRequest,
    InferenceResponse,
    ModelConfig,
    ModelPlatformError,
    PhaseClock,
    RawResponse,
    Unavailable,
)

from . import bls
from .bls import ModelCalls
from .device import host_inputs
from .kinds import PROCESS, instance_kind
from .limits import PythonOptions, process_limits, refuse_limits_for_threads
from .loader import import_model_module
from .process_runner import ProcessRunner
from .runner import Runner
from .thread_runner import ThreadRunner
from .triton_config import auto_completed
from .triton_runner import TritonRunner

T = TypeVar("T")


class PythonBackend(Backend):
    kind: ClassVar[str] = "python"
    model_files: ClassVar[tuple[str, ...]] = ("model.py",)
    #: Triton python models may keep GPU inputs on the GPU (device.py); other runners get host copies.
    accepts_device_memory: ClassVar[bool] = True
    #: The server's ``[plugins.python]`` defaults (with_options); built-in ones until then.
    options: ClassVar[PythonOptions] = PythonOptions()

    @classmethod
    def with_options(cls, options: PythonOptions) -> type[PythonBackend]:
        """This backend with the server's defaults: the class the plugin registers."""
        return type(cls.__name__, (cls,), {"options": options, "__doc__": cls.__doc__})

    def __init__(self, config: ModelConfig, version_dir: Path, instance_index: int = 0) -> None:
        super().__init__(config, version_dir, instance_index)
        self._runner: Runner = _NotLoaded(config.name)
        #: How this instance's model calls other models (BLS): made at load; None in a
        #: process instance or without a server. The current calls while the model's code
        #: runs (bls.bind), so pb_utils' exec() reaches the server that runs this model.
        self._calls: ModelCalls | None = None
        #: Whether this instance's runner reads only host memory (all but TritonRunner).
        self._host_only = True
        #: The runner when it is a TritonRunner, the one that may answer at once.
        self._triton: TritonRunner | None = None

    async def load(self) -> None:
        self._calls = self._model_calls()
        self._runner = await self._chosen_runner()
        self._triton = self._runner if isinstance(self._runner, TritonRunner) else None
        self._host_only = self._triton is None
        self._runner.phases = self.phases  # the runner marks where the model's code runs
        await self._bound(self._runner.load())

    def execute(self, batch: Sequence[InferenceRequest]) -> Coroutine[Any, Any, ExecuteResult]:
        """The runner's execute, with the instance's calls current while the model runs.
        A TritonRunner makes them current itself and reads device memory, so its coroutine
        is handed back as it is: no coroutine of this backend's on every request."""
        if self._host_only:
            return self._bound_execute(batch)
        return self._runner.execute(batch)

    def execute_now(self, request: InferenceRequest) -> InferenceResponse | ModelPlatformError | None:
        """A TritonRunner's answer at once, where its model runs inline; the other runners
        await their model or its process: None, and the request goes to :meth:`execute`."""
        triton = self._triton
        return None if triton is None else triton.execute_now(request)

    async def _bound_execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        host_inputs(batch)
        token = bls.bind(self._calls)
        try:
            return await self._runner.execute(batch)
        finally:
            bls.unbind(token)

    def stream(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        if self._host_only:
            host_inputs((request,))
        return self._bound_steps(self._runner.stream(request))

    @property
    def streams(self) -> bool:
        return self.config.decoupled or self._runner.streams

    async def handle_raw(self, body: bytes, headers: Mapping[str, str]) -> RawResponse:
        return await self._bound(self._runner.handle_raw(body, headers))

    async def unload(self) -> None:
        runner, self._runner = self._runner, _NotLoaded(self.config.name)
        self._triton = None
        try:
            await self._bound(runner.unload())
        finally:
            if self._calls is not None:
                bls.unloaded(self._calls)

    async def _chosen_runner(self) -> Runner:
        """The runner for this instance, from the model parameter and the file's contents."""
        config, version_dir, index = self.config, self.version_dir, self.instance_index
        if instance_kind(config) == PROCESS:  # the server never imports model.py then
            return ProcessRunner(config, version_dir, index, process_limits(config, self.options))
        refuse_limits_for_threads(config)
        module = await asyncio.to_thread(import_model_module, version_dir, config.default_model_filename)
        triton_model = getattr(module, "TritonPythonModel", None)
        if triton_model is not None:
            self.config = config = await self._completed(triton_model)
            return TritonRunner(module, config, version_dir, index, self._calls)
        return ThreadRunner(module, config, version_dir, index, self._calls)

    async def _completed(self, triton_model: type) -> ModelConfig:
        """The configuration ``auto_complete_config`` completes, as Triton calls it: once per load.

        The first instance completes it; the model manager hands the completed
        configuration to the next instances (they find it done), the scheduler
        and the config endpoint.
        """
        if self.options.disable_auto_complete_config or self.instance_index > 0:
            return self.config
        return await auto_completed(triton_model, self.config)

    def _model_calls(self) -> ModelCalls | None:
        """How this instance's model calls other models (BLS), through the server that runs it."""
        if self.dataplane is None or instance_kind(self.config) == PROCESS:
            return None  # a process instance's model gets CallsRefused in its child
        calls = ModelCalls(self.dataplane, asyncio.get_running_loop())
        bls.loaded(calls)
        return calls

    async def _bound(self, work: Awaitable[T]) -> T:
        """Await the model's ``work`` with this instance's calls current (bls.bound)."""
        token = bls.bind(self._calls)
        try:
            return await work
        finally:
            bls.unbind(token)

    async def _bound_steps(
        self, responses: AsyncIterator[InferenceResponse]
    ) -> AsyncIterator[InferenceResponse]:
        """``responses`` with this instance's calls current at each step, whoever reads it."""
        try:
            while True:
                token = bls.bind(self._calls)
                try:
                    response = await anext(responses)
                except StopAsyncIteration:
                    return
                finally:
                    bls.unbind(token)
                yield response
        finally:
            closing = getattr(responses, "aclose", None)  # a reader that left early closes it now
            if closing is not None:
                await closing()


class _NotLoaded:
    """The runner before ``load`` and after ``unload``: every call is refused."""

    phases: PhaseClock  # never read: no model code runs here
    streams = False

    def __init__(self, model: str) -> None:
        self._error = f"model '{model}' is not loaded"

    async def load(self) -> None:
        pass

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        return [Unavailable(self._error) for _ in batch]

    async def stream(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        raise Unavailable(self._error)
        yield  # an async generator, as every stream is

    async def handle_raw(self, body: bytes, headers: Mapping[str, str]) -> RawResponse:
        raise Unavailable(self._error)

    async def unload(self) -> None:
        pass
