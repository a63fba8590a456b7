"""Runs one request through an ensemble's steps, each as soon as its inputs are ready.

Every step is a request to the DataPlane, so the step's model queues,
batches, counts and traces it as any client request. Steps whose inputs are
ready together run as concurrent tasks; a chain (one step ready at a time)
runs in the request's own task, paying for no task at all. Tensors pass
between steps by reference: a renamed :class:`Tensor` over the same array.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from modelplatform import (
    DataPlane,
    InferenceRequest,
    InferenceResponse,
    Internal,
    ModelConfig,
    RequestedOutput,
    Tensor,
)

from .graph import Wiring, step_name


class Pipeline:
    """One ensemble version's engine; ``run`` may be called for many requests at once."""

    def __init__(self, config: ModelConfig, wiring: Wiring, dataplane: DataPlane) -> None:
        self._name = config.name
        self._wiring = wiring
        self._dataplane = dataplane
        self._outputs = tuple(spec.name for spec in config.outputs)
        scheduling = config.ensemble_scheduling
        limit = scheduling.max_inflight_requests if scheduling is not None else 0
        #: Triton's max_inflight_requests: at most this many requests in each step at once.
        self._limits = tuple(asyncio.Semaphore(limit) if limit else None for _ in wiring.steps)

    async def run(self, request: InferenceRequest) -> InferenceResponse:
        tensors = {t.name: t for t in request.inputs}
        missing = [len(needs) for needs in self._wiring.needs]
        ready = [index for index, count in enumerate(missing) if count == 0]
        running: dict[asyncio.Task[InferenceResponse], int] = {}
        try:
            while ready or running:
                if len(ready) == 1 and not running:  # a chain: no task needed
                    index = ready.pop()
                    response = await self._step(index, request, tensors)
                    ready += self._stored(index, response, tensors, missing)
                    continue
                for index in ready:
                    running[asyncio.ensure_future(self._step(index, request, tensors))] = index
                ready = []
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    index = running.pop(task)
                    ready += self._stored(index, task.result(), tensors, missing)
        finally:
            for task in running:  # a step failed or the client left: the others stop too
                task.cancel()
                task.add_done_callback(_retrieved)
        outputs = [tensors[name] for name in self._outputs if name in tensors]
        return InferenceResponse(request.model_name, request.model_version, outputs, id=request.id)

    async def _step(
        self, index: int, request: InferenceRequest, tensors: Mapping[str, Tensor]
    ) -> InferenceResponse:
        step = self._wiring.steps[index]
        inputs = [_renamed(tensors[source], name) for name, source in step.input_map.items()]
        call = InferenceRequest(
            step.model_name,
            inputs,
            model_version="" if step.model_version < 0 else str(step.model_version),
            id=request.id,
            parameters=dict(request.parameters),
            outputs=[RequestedOutput(name) for name in step.output_map],
        )
        limit = self._limits[index]
        if limit is None:
            return await self._dataplane.infer(call)
        async with limit:
            return await self._dataplane.infer(call)

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
                    f"ensemble '{self._name}' {step_name(index, step)}: "
                    f"the model returned no output '{name}'"
                )
            tensors[target] = _renamed(produced, target)
            for reader in self._wiring.readers.get(target, ()):
                missing[reader] -= 1
                if missing[reader] == 0:
                    ready.append(reader)
        return ready


def _retrieved(task: asyncio.Task[InferenceResponse]) -> None:
    """A step that failed after its request already had: its error is seen, not logged as lost."""
    if not task.cancelled():
        task.exception()


def _renamed(tensor: Tensor, name: str) -> Tensor:
    """The same array under another name (no copy)."""
    return Tensor(name, tensor.datatype, tensor.shape, tensor.data)
