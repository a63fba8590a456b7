"""Joins a batch of requests into one ``infer`` call and splits the answer.

Used for batching models (``max_batch_size > 0``) when the dynamic batcher
hands over several requests: the model's cost is then paid once per batch.
Requests in one batch share their non-batch dims (the batcher groups them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from modelplatform import InferenceRequest


def join_inputs(batch: Sequence[InferenceRequest]) -> tuple[dict[str, np.ndarray], list[int]]:
    """Inputs concatenated along the batch axis, and each request's row count."""
    names = [t.name for t in batch[0].inputs]
    joined = {name: np.concatenate([request.arrays()[name] for request in batch], axis=0) for name in names}
    return joined, [request.inputs[0].shape[0] for request in batch]


def split_outputs(outputs: Any, rows: list[int]) -> list[dict[str, np.ndarray]] | None:
    """Each request's share of every output, or None when the outputs are not batched."""
    if not isinstance(outputs, dict):
        return None
    total = sum(rows)
    arrays = {name: np.asarray(value) for name, value in outputs.items()}
    if any(a.ndim == 0 or a.shape[0] != total for a in arrays.values()):
        return None
    bounds = np.cumsum(rows)[:-1]
    parts = {name: np.split(array, bounds) for name, array in arrays.items()}
    return [{name: parts[name][i] for name in arrays} for i in range(len(rows))]
