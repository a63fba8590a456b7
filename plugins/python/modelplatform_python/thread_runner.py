"""The default runner: a ``Model`` from ``model.py`` in the server process.

A synchronous ``infer`` runs inline on the loop while its measured calls are
cheap, else on the instance's own thread (calls.py); an ``async def infer``
runs on the loop. ``infer`` may be a generator (sync or async) yielding
several outputs dicts: then the model streams, and a unary request gets its
last yield. ``http()`` answers the model's raw route (raw.py).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from modelplatform import InferenceRequest, InferenceResponse, InvalidArgument, ModelConfig, RawResponse

from .bls import ModelCalls, bind
from .calls import InstanceCaller
from .infer_runner import Infer, InferRunner
from .loader import forget_module, model_class
from .raw import call_http
from .usercode import call_optional, produced_items


class ThreadRunner(InferRunner):
    """One ``Model`` instance living in the server process."""

    def __init__(
        self,
        module: ModuleType,
        config: ModelConfig,
        version_dir: Path,
        instance: int,
        calls: ModelCalls | None = None,
    ) -> None:
        super().__init__(config)
        #: Handed to ``load`` as its third argument: how the model calls other models.
        self._calls = calls
        self._module = module
        self._version_dir = version_dir
        self._caller = InstanceCaller(
            f"{config.name}-{instance}", thread_setup=functools.partial(bind, calls)
        )
        self._model: Any = None

    async def load(self) -> None:
        self._model = model_class(self._module, self._version_dir)()
        infer = self._model.infer
        self.streams = inspect.isgeneratorfunction(infer) or inspect.isasyncgenfunction(infer)
        self._joins = self._joins and not self.streams  # a generator answers one request
        self._infer = self._calling(infer)
        load = getattr(self._model, "load", None)
        await call_optional(load, self.config, self._version_dir, self._calls)

    async def unload(self) -> None:
        try:
            await call_optional(getattr(self._model, "unload", None))
        finally:
            self._caller.close()
            self._model = None
            forget_module(self._module)

    def stream(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        if not self.streams:
            return super().stream(request)
        return self._streamed(request)

    async def handle_raw(self, body: bytes, headers: Mapping[str, str]) -> RawResponse:
        return await call_http(self._model, self.config.name, body, headers)

    def _calling(self, infer: Any) -> Infer:
        """How a request calls ``infer``: chosen once, so it pays for no decision or extra frame."""
        if self.streams:
            return self._last_yield
        if inspect.iscoroutinefunction(infer):
            return infer  # on the loop
        return functools.partial(self._caller.call, infer)  # inline or on the thread (calls.py)

    async def _streamed(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        # aclosing: a consumer that stops early closes the model's generator now.
        async with contextlib.aclosing(self._iterate(request.arrays())) as produced:
            async for outputs in produced:
                yield self._response(request, outputs)

    async def _last_yield(self, inputs: dict[str, np.ndarray]) -> Any:
        """A generator model over a unary protocol: its last yield is the response."""
        last: Any = None
        async for last in self._iterate(inputs):  # noqa: B007 - only the last value is kept
            pass
        if last is None:  # the request asked for no step: no response to answer a unary call with
            raise InvalidArgument(
                f"model '{self.config.name}' yielded no response for this request; "
                "a generator model answers a unary call with its last response"
            )
        return last

    def _iterate(self, inputs: dict[str, np.ndarray]) -> AsyncGenerator[Any, None]:
        return produced_items(self._model.infer(inputs))
