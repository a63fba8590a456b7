"""Runs one request through an ensemble's steps, each as soon as its inputs are ready.

Every step is a request to the DataPlane, so the step's model queues,
batches, counts and traces it as any client request. Steps whose inputs are
ready together run as concurrent tasks; a chain (one step ready at a time)
runs in the request's own task, paying for no task at all. Tensors pass
between steps by reference: a renamed :class:`Tensor` over the same array.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass

from modelplatform import (
    InferenceRequest,
    InferenceResponse,
    Internal,
    ModelConfig,
    RequestedOutput,
    ServerCalls,
    Tensor,
)

from .graph import Wiring, step_name


class Pipeline:
    """One ensemble version's engine; ``run`` and ``stream`` may be called for many requests at once."""

    def __init__(
        self,
        config: ModelConfig,
        wiring: Wiring,
        dataplane: ServerCalls,
        streaming: frozenset[int] = frozenset(),
    ) -> None:
        self._name = config.name
        self._wiring = wiring
        self._dataplane = dataplane
        self._outputs = tuple(spec.name for spec in config.outputs)
        #: Steps whose model may answer several times: ``stream`` goes on once per answer.
        self._streaming = streaming
        scheduling = config.ensemble_scheduling
        limit = scheduling.max_inflight_requests if scheduling is not None else 0
        #: Triton's max_inflight_requests: at most this many requests in each step at once.
        self._limits = tuple(asyncio.Semaphore(limit) if limit else None for _ in wiring.steps)

    async def run(self, request: InferenceRequest) -> InferenceResponse:
        """One response: every step answers once (a streaming step model as a unary call)."""
        flow = self._start(request)
        await self._advance(request, flow, hold=frozenset())
        return self._response(request, flow.tensors)

    async def stream(self, request: InferenceRequest) -> AsyncGenerator[InferenceResponse, None]:
        """One response per answer of the streaming steps, in their order.

        Each answer of a streaming step is a branch: the steps after it run
        again on that answer's tensors (and on those computed before it), and
        the branch's ensemble outputs are one response. Branches run one after
        the other, so a fast producer waits for its consumers (backpressure),
        and closing the stream closes the step models' streams too.
        """
        async with contextlib.aclosing(self._branches(request, self._start(request))) as branches:
            async for tensors in branches:
                yield self._response(request, tensors)

    def _start(self, request: InferenceRequest) -> _Flow:
        missing = [len(needs) for needs in self._wiring.needs]
        ready = [index for index, count in enumerate(missing) if count == 0]
        return _Flow({t.name: t for t in request.inputs}, missing, ready, [])

    async def _branches(
        self, request: InferenceRequest, flow: _Flow
    ) -> AsyncGenerator[dict[str, Tensor], None]:
        """The tensors of every finished branch, depth first."""
        await self._advance(request, flow, hold=self._streaming)
        if not flow.held:
            yield flow.tensors
            return
        index = flow.held.pop()
        async with contextlib.aclosing(self._step_stream(index, request, flow.tensors)) as answers:
            async for answer in answers:
                if not answer.outputs:  # a final flag sent alone: nothing to pass on
                    continue
                branch = flow.fork()
                branch.ready += self._stored(index, answer, branch.tensors, branch.missing)
                async with contextlib.aclosing(self._branches(request, branch)) as finished:
                    async for tensors in finished:
                        yield tensors

    async def _advance(self, request: InferenceRequest, flow: _Flow, hold: frozenset[int]) -> None:
        """Run every step that can run, except those in ``hold``: they wait in ``flow.held``."""
        tensors, missing = flow.tensors, flow.missing
        ready = _runnable(flow.ready, hold, flow)
        flow.ready = []
        running: dict[asyncio.Task[InferenceResponse], int] = {}
        try:
            while ready or running:
                if len(ready) == 1 and not running:  # a chain: no task needed
                    index = ready.pop()
                    response = await self._step(index, request, tensors)
                    ready = _runnable(self._stored(index, response, tensors, missing), hold, flow)
                    continue
                for index in ready:
                    running[asyncio.ensure_future(self._step(index, request, tensors))] = index
                ready = []
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    index = running.pop(task)
                    ready += _runnable(self._stored(index, task.result(), tensors, missing), hold, flow)
        finally:
            for task in running:  # a step failed or the client left: the others stop too
                task.cancel()
                task.add_done_callback(_retrieved)

    def _response(self, request: InferenceRequest, tensors: Mapping[str, Tensor]) -> InferenceResponse:
        outputs = [tensors[name] for name in self._outputs if name in tensors]
        return InferenceResponse(request.model_name, request.model_version, outputs, id=request.id)

    def _call(self, index: int, request: InferenceRequest, tensors: Mapping[str, Tensor]) -> InferenceRequest:
        step = self._wiring.steps[index]
        inputs = [_renamed(tensors[source], name) for name, source in step.input_map.items()]
        return InferenceRequest(
            step.model_name,
            inputs,
            model_version="" if step.model_version < 0 else str(step.model_version),
            id=request.id,
            parameters=dict(request.parameters),
            outputs=[RequestedOutput(name) for name in step.output_map],
        )

    async def _step(
        self, index: int, request: InferenceRequest, tensors: Mapping[str, Tensor]
    ) -> InferenceResponse:
        call = self._call(index, request, tensors)
        limit = self._limits[index]
        if limit is None:
            return await self._dataplane.infer(call)
        async with limit:
            return await self._dataplane.infer(call)

    async def _step_stream(
        self, index: int, request: InferenceRequest, tensors: Mapping[str, Tensor]
    ) -> AsyncGenerator[InferenceResponse, None]:
        """A streaming step's answers; its place under max_inflight_requests is held until the last."""
        call = self._call(index, request, tensors)
        limit = self._limits[index]
        place = limit if limit is not None else contextlib.nullcontext()
        async with place, contextlib.aclosing(self._dataplane.stream(call)) as answers:
            async for answer in answers:
                yield answer

    def _stored(
        self,
        index: int,
        response: InferenceResponse,
        tensors: dict[str, Tensor],
        missing: list[int],
    ) -> list[int]:
        """Keep the step's outputs under their ensemble names; the steps that became ready."""
        step = self._wiring.steps[index]
        ready: list[int] = []
        for name, target in step.output_map.items():
            produced = response.output(name)
            if produced is None:
                raise Internal(
                    f"ensemble '{self._name}' {step_name(index, step)}: the model returned no output '{name}'"
                )
            tensors[target] = _renamed(produced, target)
            for reader in self._wiring.readers.get(target, ()):
                missing[reader] -= 1
                if missing[reader] == 0:
                    ready.append(reader)
        return ready


@dataclass(slots=True)
class _Flow:
    """One branch of a request: its tensors so far and the steps' progress."""

    tensors: dict[str, Tensor]
    #: Per step: how many of the tensors it reads are still missing.
    missing: list[int]
    #: Steps whose inputs are all there, not started yet.
    ready: list[int]
    #: Streaming steps whose inputs are all there, left for ``_branches`` to run.
    held: list[int]

    def fork(self) -> _Flow:
        """A copy to go on with (the tensors themselves are shared, never changed)."""
        return _Flow(dict(self.tensors), list(self.missing), list(self.ready), list(self.held))


def _runnable(indexes: list[int], hold: frozenset[int], flow: _Flow) -> list[int]:
    """The steps of ``indexes`` to run now; those in ``hold`` go to ``flow.held`` instead."""
    if not hold:  # a unary run holds nothing: no work per step
        return indexes
    flow.held += [index for index in indexes if index in hold]
    return [index for index in indexes if index not in hold]


def _retrieved(task: asyncio.Task[InferenceResponse]) -> None:
    """A step that failed after its request already had: its error is seen, not logged as lost."""
    if not task.cancelled():
        task.exception()


def _renamed(tensor: Tensor, name: str) -> Tensor:
    """The same array under another name (no copy)."""
    return Tensor(name, tensor.datatype, tensor.shape, tensor.data)
