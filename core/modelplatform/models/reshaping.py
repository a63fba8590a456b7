"""Triton's ``reshape`` on inputs and outputs, applied around a backend's calls.

A configured input ``reshape`` is the shape the model receives instead of
``dims`` (clients still send ``dims``; a batching model keeps the batch
dimension in front); an output ``reshape`` is the shape the model produces,
turned back into ``dims`` for the client. Triton's core does this before and
after the backend, so every backend sees the same shapes here: the class the
loader makes for a model with a reshape (:func:`reshaping`) is the backend's
own class with ``execute`` (and ``stream``, where the backend streams) wrapped.
Views only: no tensor is copied.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from typing import Any

from modelplatform.base.errors import Internal
from modelplatform.base.inference import InferenceRequest, InferenceResponse, Tensor
from modelplatform.base.model_config import ModelConfig
from modelplatform.models.backend import Backend, ExecuteResult


def has_reshape(config: ModelConfig) -> bool:
    return any(spec.reshape is not None for spec in (*config.inputs, *config.outputs))


def reshaping(cls: type[Backend]) -> type[Backend]:
    """``cls`` with its calls reshaped as the configuration says (same kind, same class flags)."""

    async def execute(self: Backend, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        originals = [request.inputs for request in batch]
        for request in batch:
            request.inputs = model_inputs(self.config, request.inputs)
        try:
            results = await cls.execute(self, batch)
        finally:
            for request, inputs in zip(batch, originals):
                request.inputs = inputs  # the caller's request is as it sent it again
        return [_client_result(self.config, result) for result in results]

    async def stream(self: Backend, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        original = request.inputs
        request.inputs = model_inputs(self.config, original)
        try:
            async for response in cls.stream(self, request):
                yield client_outputs(self.config, response)
        finally:
            request.inputs = original

    members: dict[str, Any] = {"execute": execute, "__doc__": cls.__doc__, "__module__": cls.__module__}
    if cls.stream is not Backend.stream:  # only a streaming backend gets a stream to wrap
        members["stream"] = stream
    return type(cls.__name__, (cls,), members)


def _client_result(config: ModelConfig, result: Any) -> Any:
    """One entry of ``execute``'s answer: a response reshaped, or the error for its request alone."""
    if not isinstance(result, InferenceResponse):
        return result
    try:
        return client_outputs(config, result)
    except Internal as error:
        return error


def model_inputs(config: ModelConfig, inputs: list[Tensor]) -> list[Tensor]:
    """The inputs as the model takes them: each one with a ``reshape`` in that shape."""
    shaped = []
    for tensor in inputs:
        spec = config.input_spec(tensor.name)
        if spec is None or spec.reshape is None:
            shaped.append(tensor)
            continue
        shape = _with_batch(config, tensor.shape, spec.reshape)
        shaped.append(dataclasses.replace(tensor, shape=shape, data=tensor.data.reshape(shape)))
    return shaped


def client_outputs(config: ModelConfig, response: InferenceResponse) -> InferenceResponse:
    """The response with each output that has a ``reshape`` back in its ``dims``."""
    for index, tensor in enumerate(response.outputs):
        spec = config.output_spec(tensor.name)
        if spec is None or spec.reshape is None:
            continue
        try:
            data = tensor.data.reshape(_with_batch(config, tensor.shape, spec.dims))
        except ValueError as error:
            raise Internal(
                f"model '{config.name}': output '{tensor.name}' of shape {list(tensor.shape)} "
                f"does not reshape to its dims {list(spec.dims)}: {error}"
            ) from None
        response.outputs[index] = dataclasses.replace(tensor, shape=data.shape, data=data)
    return response


def _with_batch(config: ModelConfig, shape: tuple[int, ...], target: tuple[int, ...]) -> tuple[int, ...]:
    """``target`` behind the tensor's batch dimension when the model batches."""
    return (shape[0], *target) if config.batching and shape else tuple(target)
