"""What the thread and process runners share: a ``Model`` whose ``infer(inputs)`` answers.

A subclass decides where ``infer`` runs by setting :attr:`InferRunner._infer`
in its ``load``: a coroutine function from inputs to the outputs dict. For
a batching model (``max_batch_size > 0``) the dynamic batcher may hand over
several requests; they are joined into one ``infer`` call (batching.py),
and when that fails or the outputs are not batched, each request is retried
alone, so a bad request fails alone (Triton's contract). When the instance
itself failed under the joined call (a process instance's child crashed,
hung or overgrew: faults.py), every request of it fails with that error at
once: retried one by one, a hang would cost one timeout per request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

import numpy as np

from modelplatform import (
    ExecuteResult,
    InferenceRequest,
    InferenceResponse,
    ModelConfig,
    ModelExecutionError,
    ModelPlatformError,
    PhaseClock,
    RawResponse,
    Unavailable,
)

from .batching import join_inputs, split_outputs
from .faults import InstanceFailed
from .outputs import OutputTypes
from .raw import no_http

#: A model's ``infer``, wherever it runs: inputs -> what the model returned.
Infer = Callable[[dict[str, np.ndarray]], Awaitable[Any]]


class InferRunner:
    """Executes requests through ``self._infer``; subclasses load and unload the model."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self._outputs = OutputTypes(config)
        self._infer: Infer = self._not_loaded
        #: Whether several requests may share one ``infer`` call (a generator model may not, nor a
        #: stateful one: a joined call retried per request would apply a sequence's step twice).
        self._joins = config.batching and config.sequence_batching is None
        #: Whether ``stream`` answers several times (a generator model; set by a subclass's load).
        self.streams = False
        #: The backend's marks of where ``infer`` starts and ends (its own clock until handed one).
        self.phases = PhaseClock()

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        if len(batch) == 1:  # the common case, without a comprehension's frame
            return [await self._execute_one(batch[0])]
        if self._joins:
            joined = await self._execute_joined(batch)
            if joined is not None:
                return joined
        return [await self._execute_one(request) for request in batch]

    def stream(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        """A model that does not generate streams exactly one response."""
        return self._one_response(request)

    async def handle_raw(self, body: bytes, headers: Mapping[str, str]) -> RawResponse:
        raise no_http(self.config.name)

    async def _execute_joined(self, batch: Sequence[InferenceRequest]) -> ExecuteResult | None:
        """One ``infer`` call for the whole batch; None means run them one by one."""
        try:
            inputs, rows = join_inputs(batch)
            shares = split_outputs(await self._timed_infer(inputs), rows)
            if shares is None:
                return None
            return [self._response(r, share) for r, share in zip(batch, shares)]
        except InstanceFailed as failure:  # one error object per request: each is logged
            return [InstanceFailed(failure.model, failure.instance, failure.reason) for _ in batch]
        except Exception:  # noqa: BLE001 - retried per request below
            return None

    async def _execute_one(self, request: InferenceRequest) -> InferenceResponse | ModelPlatformError:
        phases = self.phases
        try:
            phases.inputs_ready()
            outputs = await self._infer(request.arrays())
            phases.outputs_started()
            return self._response(request, outputs)
        except ModelPlatformError as error:
            return error
        except Exception as error:  # noqa: BLE001 - user code fails its own request only
            return ModelExecutionError(self.config.name, error)

    async def _timed_infer(self, inputs: dict[str, np.ndarray]) -> Any:
        """``infer``, marking the compute phases (a batch run one by one: the last request's)."""
        self.phases.inputs_ready()
        outputs = await self._infer(inputs)
        self.phases.outputs_started()
        return outputs

    async def _one_response(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        yield self._response(request, await self._infer(request.arrays()))

    def _response(self, request: InferenceRequest, outputs: Any) -> InferenceResponse:
        tensors = self._outputs.tensors(outputs)
        return InferenceResponse(request.model_name, request.model_version, tensors)

    async def _not_loaded(self, inputs: dict[str, np.ndarray]) -> Any:
        raise Unavailable(f"model '{self.config.name}' is not loaded")
