"""Calls from a python model to other models, in the server's own process (BLS).

Triton runs python models in a stub process and passes a nested call's
tensors through shared memory; here the model runs in the server, so a
nested call is a request to the same :class:`~modelplatform.DataPlane` a
client reaches: the called model keeps its own batching, instances and
statistics, and numpy arrays pass by reference, never copied.

Where the calling code runs decides how it waits:

- on the event loop (``async def infer`` / ``async def execute``): ``await``
  the ``*_async`` calls;
- on the instance's thread (a plain ``infer`` / ``execute``): the blocking
  calls hand the request to the loop and wait for the answer. A blocking call
  made while the model runs inline on the loop (calls.py) raises
  :class:`~modelplatform_python.calls.NeedsThread`: the instance moves to its
  thread for good and that call runs again there.

A process instance (``python.instance_kind: process``) has no DataPlane in
its child: its model gets :class:`CallsRefused`, whose every call fails
with a clear ``Unsupported``.

Triton's ``pb_utils.InferenceRequest(...).exec()`` has no handle to pass, so
it reaches the calls of the model whose code runs now (:func:`bound`): a
context variable the backend sets around each call into its model, so each
model calls through the server that runs it, even with several servers in
one process.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Iterator, Mapping, Sequence
from contextvars import ContextVar, Token
from typing import Any, TypeVar

import numpy as np

from modelplatform import (
    InferenceRequest,
    InferenceResponse,
    RequestedOutput,
    ServerCalls,
    Tensor,
    Unavailable,
    Unsupported,
)

from .calls import NeedsThread, inline_call_running, keep_on_thread

T = TypeVar("T")
Arrays = dict[str, np.ndarray]


class ModelCalls:
    """What a python model uses to call other models (``load(self, config, version_dir, models)``).

    ``infer`` answers a dict of output arrays; ``stream`` yields one dict per
    response of a streaming (generator or decoupled) model. A failure raises
    the called model's error (a :class:`~modelplatform.ModelPlatformError`),
    which fails the calling request with the same code unless caught.
    """

    def __init__(self, dataplane: ServerCalls, loop: asyncio.AbstractEventLoop) -> None:
        self._dataplane = dataplane
        self._loop = loop

    # ---- on the event loop ----

    async def infer_async(
        self, model: str, inputs: Mapping[str, np.ndarray], outputs: Sequence[str] | None = None,
        version: str = "",
    ) -> Arrays:  # fmt: skip
        response = await self.call_async(request_for(model, inputs, outputs, version))
        return {t.name: t.data for t in response.outputs}

    async def stream_async(
        self, model: str, inputs: Mapping[str, np.ndarray], outputs: Sequence[str] | None = None,
        version: str = "",
    ) -> AsyncIterator[Arrays]:  # fmt: skip
        async for response in self.responses(request_for(model, inputs, outputs, version)):
            yield {t.name: t.data for t in response.outputs}

    async def call_async(self, request: InferenceRequest) -> InferenceResponse:
        return await self._dataplane.infer(request)

    def responses(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        return self._dataplane.stream(request)

    # ---- blocking, from the instance's thread ----

    def infer(
        self, model: str, inputs: Mapping[str, np.ndarray], outputs: Sequence[str] | None = None,
        version: str = "",
    ) -> Arrays:  # fmt: skip
        return self.wait(self.infer_async(model, inputs, outputs, version))

    def stream(
        self, model: str, inputs: Mapping[str, np.ndarray], outputs: Sequence[str] | None = None,
        version: str = "",
    ) -> Iterator[Arrays]:  # fmt: skip
        return self.iterate(self.stream_async(model, inputs, outputs, version))

    def wait(self, awaitable: Awaitable[T]) -> T:
        """Run ``awaitable`` on the server's loop and block this thread until it is done."""
        self._check_off_loop(awaitable)
        keep_on_thread()
        return asyncio.run_coroutine_threadsafe(_awaited(awaitable), self._loop).result()

    def iterate(self, items: AsyncIterator[T]) -> Iterator[T]:
        """An async iterator of the loop's, stepped from this thread; closed if left early."""
        try:
            while True:
                try:
                    yield self.wait(items.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            closing = getattr(items, "aclose", None)
            if closing is not None:
                self.wait(closing())

    def _check_off_loop(self, awaitable: Awaitable[Any]) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # a worker thread: blocking is fine
        _discard(awaitable)
        if inline_call_running():
            raise NeedsThread
        raise Unavailable(
            "a blocking model call was made on the event loop; "
            "in an async method await the *_async call instead"
        )


class CallsRefused:
    """What a process instance's model gets for ``models``: no DataPlane runs in its child."""

    def __init__(self, model: str) -> None:
        self._model = model

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise Unsupported(
            f"model '{self._model}': calls to other models (models.{name}) are not available "
            "in a process instance (python.instance_kind: process); use thread instances"
        )


def request_for(
    model: str, inputs: Mapping[str, np.ndarray], outputs: Sequence[str] | None, version: str = ""
) -> InferenceRequest:
    """A request over the caller's arrays (no copy)."""
    tensors = [Tensor.from_array(name, np.asarray(array)) for name, array in inputs.items()]
    wanted = None if outputs is None else [RequestedOutput(name) for name in outputs]
    return InferenceRequest(model, tensors, model_version=version, outputs=wanted)


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _discard(awaitable: Awaitable[Any]) -> None:
    """Close a coroutine that will never run (no 'never awaited' warning)."""
    close = getattr(awaitable, "close", None)
    if close is not None:
        close()


#: The calls of the model whose code runs now, for ``pb_utils`` (a module-level API with
#: no handle to pass). A context variable, not a global: the backend sets it around each
#: call into its model (per task, so two servers on one event loop each see their own),
#: and each instance's thread holds its own for good (calls.InstanceCaller). None: a
#: model with no server to call (a backend built without one).
#: The calls of the model whose code runs in this context (bind/unbind; the backend sets it
#: itself on every request, where two wrapper frames would cost more than the set).
current_calls: ContextVar[ModelCalls | None] = ContextVar("modelplatform_python_bls_calls")

#: Every loaded instance's calls, asked only from a thread the model started itself: such a
#: thread starts with an empty context (threading.Thread copies none), so it finds its
#: server only while every loaded instance belongs to the same one.
_loaded: set[ModelCalls] = set()
_loaded_lock = threading.Lock()


def bind(calls: ModelCalls | None) -> Token[ModelCalls | None]:
    """Make ``calls`` the current model's until :func:`unbind` (or for good, on its own thread)."""
    return current_calls.set(calls)


def unbind(token: Token[ModelCalls | None]) -> None:
    current_calls.reset(token)


def bound() -> ModelCalls:
    """The calls of the model whose code runs in this context."""
    try:
        calls = current_calls.get()
    except LookupError:  # a thread the model started, not one the server runs it on
        calls = _only_server()
    if calls is None:
        raise Unavailable("no server to call models through: BLS runs inside a server's model")
    return calls


def loaded(calls: ModelCalls) -> None:
    with _loaded_lock:
        _loaded.add(calls)


def unloaded(calls: ModelCalls) -> None:
    with _loaded_lock:
        _loaded.discard(calls)


def _only_server() -> ModelCalls | None:
    with _loaded_lock:
        live = list(_loaded)
    if not live:
        return None
    first = live[0]
    if any(calls._dataplane is not first._dataplane for calls in live):
        raise Unavailable(
            "a model called another model from a thread it started itself while several servers "
            "run in this process: start that thread under contextvars.copy_context().run so it "
            "knows its server"
        )
    return first
