"""Several requests for one signature as one call, and the outputs cut back.

Requests merge when they send the same inputs with the same per-item shapes
and datatypes (so the same signature), ask for the same outputs, and fit
``max_batch_size`` together; otherwise, and when a merged call fails, each
runs alone, so a bad request fails by itself.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from modelplatform import InferenceRequest, Internal

Arrays = dict[str, np.ndarray]


def can_merge(batch: Sequence[InferenceRequest], max_batch_size: int) -> bool:
    if len(batch) < 2 or max_batch_size <= 0:
        return False
    first = _shape_key(batch[0])
    if any(_shape_key(request) != first for request in batch[1:]):
        return False
    return sum(batch_size(request) for request in batch) <= max_batch_size


def merge(batch: Sequence[InferenceRequest]) -> Arrays:
    names = [tensor.name for tensor in batch[0].inputs]
    return {name: np.concatenate([_input(r, name) for r in batch]) for name in names}


def split(outputs: Arrays, sizes: Sequence[int]) -> list[Arrays]:
    total = sum(sizes)
    for name, array in outputs.items():
        if array.ndim == 0 or array.shape[0] != total:
            raise Internal(f"output '{name}' has shape {list(array.shape)}, expected batch {total}")
    bounds = np.cumsum([0, *sizes])
    return [{name: array[a:b] for name, array in outputs.items()} for a, b in zip(bounds[:-1], bounds[1:])]


def batch_size(request: InferenceRequest) -> int:
    return request.inputs[0].shape[0] if request.inputs and request.inputs[0].shape else 1


def _shape_key(request: InferenceRequest) -> tuple[object, ...]:
    inputs = tuple(sorted((t.name, t.datatype, tuple(t.shape[1:])) for t in request.inputs))
    outputs = None if request.outputs is None else tuple(o.name for o in request.outputs)
    return inputs, outputs


def _input(request: InferenceRequest, name: str) -> np.ndarray:
    tensor = request.input(name)
    if tensor is None:  # can_merge compared names; this guards a misuse
        raise Internal(f"request lacks input '{name}'")
    return tensor.data
