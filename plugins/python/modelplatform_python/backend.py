"""The ``python`` backend: a ``model.py`` with a ``Model`` class.

Contract for ``<model>/<version>/model.py``::

    import numpy as np

    class Model:
        def load(self, config, version_dir):          # optional; sync or async
            self.offset = 3.0

        def infer(self, inputs):                       # required; sync or async
            # inputs: dict of input name -> numpy array (BYTES: object array of bytes)
            return {"y": inputs["x"] * 0.5 + self.offset}

        def unload(self):                              # optional; sync or async
            ...

``infer`` returns a dict of output name -> array (lists are converted; str
elements of BYTES outputs become UTF-8). Outputs declared in the model's
configuration are cast to their declared datatype. A synchronous ``infer``
runs on the instance's own worker thread, or inline on the event loop while
its measured calls are cheap (calls.py); an ``async def infer`` runs on the
loop. ``infer`` may instead be a generator (sync or async) yielding
several dicts: such a model streams (grps streaming); over unary protocols
its last yield is the response. An exception raised by user code fails that
request alone, with a clean error; the server keeps serving.

Each instance (``instance_group { count: N }``) runs in the server process by
default; with the model parameter ``python.instance_kind`` set to
``process``, each runs the ``Model`` in its own child process instead, so
pure-Python code runs in parallel (processes.py; no generator, ``http()`` or
Triton models there).

An optional ``http(self, body, headers)`` method (sync or async) answers a
raw request on the model's own route (grps ``grps.http_path``): it returns
bytes or str, ``(body, content_type)``, or an iterator of chunks to stream
(see raw.py).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from modelplatform import (
    Backend,
    ExecuteResult,
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    ModelConfig,
    ModelExecutionError,
    ModelPlatformError,
    RawResponse,
    Tensor,
)

from .batching import join_inputs, split_outputs
from .calls import InstanceCaller
from .loader import forget_module, import_model_module
from .outputs import to_tensors
from .processes import PROCESS, ProcessInstance, instance_kind
from .triton import TritonModelRunner
from .raw import call_http


class PythonBackend(Backend):
    kind: ClassVar[str] = "python"
    model_files: ClassVar[tuple[str, ...]] = ("model.py",)
    _triton: TritonModelRunner | None = None

    def __init__(self, config: ModelConfig, version_dir: Path, instance_index: int = 0) -> None:
        super().__init__(config, version_dir, instance_index)
        self._module: Any = None
        self._model: Any = None
        self._streams = False
        self._infer_awaits = False  # resolved at load, not per request
        self._caller = InstanceCaller(f"{config.name}-{instance_index}")
        self._process: ProcessInstance | None = None  # python.instance_kind "process"

    async def load(self) -> None:
        if instance_kind(self.config) == PROCESS:  # the model runs in a child (processes.py)
            self._process = ProcessInstance(self.config, self.version_dir, self.instance_index)
            await self._process.start()
            return
        self._module = await asyncio.to_thread(import_model_module, self.version_dir)
        triton_class = getattr(self._module, "TritonPythonModel", None)
        if triton_class is not None:  # written for Triton's python backend (triton.py)
            runner = TritonModelRunner(
                triton_class, self.config, self.version_dir, self.instance_index, self._caller
            )
            self._model = self._triton = runner  # unload() reaches its finalize()
            await runner.load()
            return
        model_class = getattr(self._module, "Model", None)
        if model_class is None or not callable(getattr(model_class, "infer", None)):
            raise InvalidArgument(f"{self.version_dir}/model.py must define class Model with infer()")
        self._model = model_class()
        self._streams = inspect.isgeneratorfunction(self._model.infer) or inspect.isasyncgenfunction(
            self._model.infer
        )
        self._infer_awaits = inspect.iscoroutinefunction(self._model.infer)
        await _call(getattr(self._model, "load", None), self.config, self.version_dir)

    async def unload(self) -> None:
        try:
            if self._process is not None:
                await self._process.stop()
            else:
                await _call(getattr(self._model, "unload", None))
        finally:
            self._caller.close()
            self._model = None
            if self._module is not None:
                forget_module(self._module)
                self._module = None

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        if self._triton is not None:
            return await self._triton.execute(batch)
        if len(batch) > 1 and self.config.batching and not self._streams:
            joined = await self._execute_joined(batch)
            if joined is not None:
                return joined
        return [await self._execute_one(request) for request in batch]

    async def _execute_joined(self, batch: Sequence[InferenceRequest]) -> ExecuteResult | None:
        """One infer() call for the whole batch; None means run them one by one.

        Falling back on any failure keeps Triton's contract: a bad request fails
        alone instead of failing the batch it was grouped into.
        """
        try:
            inputs, rows = join_inputs(batch)
            shares = split_outputs(await self._infer(inputs), rows)
            if shares is None:
                return None
            return [self._response(r, share) for r, share in zip(batch, shares)]
        except Exception:  # noqa: BLE001 - retried per request below
            return None

    async def stream(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:  # type: ignore[override]
        if not self._streams:
            # A plain model streams exactly one response.
            yield self._response(request, await self._infer(request.arrays()))
            return
        async for outputs in self._iterate(request):
            yield self._response(request, outputs)

    async def handle_raw(self, body: bytes, headers: Mapping[str, str]) -> RawResponse:
        """The model's optional ``http(body, headers)`` method (see raw.py)."""
        return await call_http(self._model, self.config.name, body, headers)

    async def _execute_one(self, request: InferenceRequest) -> InferenceResponse | ModelPlatformError:
        try:
            if self._streams:
                last: Any = None
                async for last in self._iterate(request):
                    pass
                if last is None:
                    raise ValueError("generator model yielded nothing")
                return self._response(request, last)
            outputs = await self._infer(request.arrays())
            return self._response(request, outputs)
        except ModelPlatformError as error:
            return error
        except Exception as error:  # noqa: BLE001 - user code fails its own request only
            return ModelExecutionError(self.config.name, error)

    async def _infer(self, inputs: dict[str, np.ndarray]) -> Any:
        if self._process is not None:
            return await self._process.infer(inputs)
        if self._infer_awaits:
            return await self._model.infer(inputs)
        return await self._caller.call(self._model.infer, inputs)

    async def _iterate(self, request: InferenceRequest) -> AsyncIterator[Any]:
        produced = self._model.infer(request.arrays())
        if inspect.isasyncgen(produced):
            async for item in produced:
                yield item
            return
        sentinel = object()
        while True:
            item = await asyncio.to_thread(next, produced, sentinel)
            if item is sentinel:
                return
            yield item

    def _response(self, request: InferenceRequest, outputs: Any) -> InferenceResponse:
        tensors: list[Tensor] = to_tensors(self.config, outputs)
        return InferenceResponse(request.model_name, request.model_version, tensors)


async def _call(method: Any, *args: Any) -> None:
    if method is None:
        return
    if inspect.iscoroutinefunction(method):
        await method(*args)
    else:
        await asyncio.to_thread(_call_flexibly, method, *args)


def _call_flexibly(method: Any, *args: Any) -> None:
    """Pass only as many arguments as the user's method takes."""
    try:
        count = len(inspect.signature(method).parameters)
    except (TypeError, ValueError):
        count = len(args)
    method(*args[:count])
