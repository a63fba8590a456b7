"""Several requests of a batching model as one forward, and its outputs cut back per request.

Requests run together when they carry the same inputs (names, datatypes,
per-item shapes) and fit ``max_batch_size`` together, which is what the
dynamic batcher hands over; the engine joins their pieces on the device. When
a joined run fails, the backend runs each request alone, so a bad request
fails by itself. Pure: no torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from modelplatform import InferenceRequest, Internal

Arrays = dict[str, np.ndarray]


def can_merge(batch: Sequence[InferenceRequest], max_batch_size: int) -> bool:
    if len(batch) < 2 or max_batch_size <= 0:
        return False
    first = _signature(batch[0])
    if any(_signature(request) != first for request in batch[1:]):
        return False
    return sum(rows(request) for request in batch) <= max_batch_size


def rows(request: InferenceRequest) -> int:
    return request.inputs[0].shape[0] if request.inputs and request.inputs[0].shape else 1


def split(outputs: Arrays, sizes: Sequence[int]) -> list[Arrays]:
    """Each output's first dimension cut into per-request views."""
    total = sum(sizes)
    for name, array in outputs.items():
        if array.ndim == 0 or array.shape[0] != total:
            raise Internal(f"output '{name}' has shape {list(array.shape)}, expected batch {total}")
    bounds = np.cumsum([0, *sizes])
    return [{name: array[a:b] for name, array in outputs.items()} for a, b in zip(bounds[:-1], bounds[1:])]


def _signature(request: InferenceRequest) -> tuple[tuple[str, str, tuple[int, ...]], ...]:
    return tuple((t.name, t.datatype, tuple(t.shape[1:])) for t in request.inputs)
