"""Several requests of a batching model as one framework call, and the outputs cut back.

What the backends that run a dynamic batcher's requests together share: when
the requests may be joined (:func:`joinable`), their inputs concatenated along
the batch (first) axis (:func:`join_inputs`), and each output's first
dimension cut back into per-request views (:func:`split_outputs`). Published
as ``modelplatform.batching``; pure numpy, no framework.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from modelplatform.base.errors import Internal
from modelplatform.base.inference import InferenceRequest

Arrays = dict[str, np.ndarray]


def rows(request: InferenceRequest) -> int:
    """The request's batch size: its first input's first dimension (1 when it has none)."""
    return request.inputs[0].shape[0] if request.inputs and request.inputs[0].shape else 1


def joinable(batch: Sequence[InferenceRequest], max_batch_size: int, *, same_outputs: bool = True) -> bool:
    """Whether ``batch`` may run as one call.

    At least two requests, a batching model (``max_batch_size > 0``), the same
    inputs in every request (name, datatype and per-item shape, in any order),
    the same requested outputs when ``same_outputs`` (None, every output, is
    one choice of its own), and at most ``max_batch_size`` rows together.
    """
    if len(batch) < 2 or max_batch_size <= 0:
        return False
    first = _key(batch[0], same_outputs)
    if any(_key(request, same_outputs) != first for request in batch[1:]):
        return False
    return sum(rows(request) for request in batch) <= max_batch_size


def join_inputs(batch: Sequence[InferenceRequest]) -> Arrays:
    """Each input of the first request, concatenated along axis 0 over the batch, by name.

    Raises :class:`Internal` when a request lacks one of them (check
    :func:`joinable` first).
    """
    names = [tensor.name for tensor in batch[0].inputs]
    return {name: np.concatenate([_input(request, name) for request in batch], axis=0) for name in names}


def split_outputs(outputs: Arrays, sizes: Sequence[int]) -> list[Arrays]:
    """Each output's first dimension cut into per-request views, ``sizes[i]`` rows for request ``i``.

    Raises :class:`Internal`, naming the output and its shape, when an output's
    first dimension is not ``sum(sizes)`` (or it has none).
    """
    total = sum(sizes)
    for name, array in outputs.items():
        if array.ndim == 0 or array.shape[0] != total:
            raise Internal(f"output '{name}' has shape {list(array.shape)}, expected batch {total}")
    bounds = np.cumsum([0, *sizes])
    return [{name: array[a:b] for name, array in outputs.items()} for a, b in zip(bounds[:-1], bounds[1:])]


def _key(request: InferenceRequest, same_outputs: bool) -> tuple[object, ...]:
    inputs = tuple(sorted((t.name, t.datatype, tuple(t.shape[1:])) for t in request.inputs))
    if not same_outputs:
        return (inputs,)
    outputs = None if request.outputs is None else tuple(o.name for o in request.outputs)
    return inputs, outputs


def _input(request: InferenceRequest, name: str) -> np.ndarray:
    tensor = request.input(name)
    if tensor is None:
        raise Internal(f"request lacks input '{name}'")
    return tensor.data
