"""Joins a batch of requests into one ``infer`` call and splits the answer.

Used for batching models (``max_batch_size > 0``) when the dynamic batcher
hands over several requests: the model's cost is then paid once per batch.
Requests in one batch share their non-batch dims (the batcher groups them).
The joining and cutting are ``modelplatform.batching``'s; what this module
adds is a model's answer that cannot be cut (not a dict, or an output
without the batch's rows) read as "run them one by one" (None).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from modelplatform import InferenceRequest, Internal
from modelplatform import batching as shared


def join_inputs(batch: Sequence[InferenceRequest]) -> tuple[dict[str, np.ndarray], list[int]]:
    """Inputs concatenated along the batch axis, and each request's row count."""
    joined = shared.join_inputs(batch)
    return joined, [request.inputs[0].shape[0] for request in batch]


def split_outputs(outputs: Any, rows: list[int]) -> list[dict[str, np.ndarray]] | None:
    """Each request's share of every output, or None when the outputs are not batched."""
    if not isinstance(outputs, dict):
        return None
    arrays = {name: np.asarray(value) for name, value in outputs.items()}
    try:
        return shared.split_outputs(arrays, rows)
    except Internal:  # an output without the batch's rows: the model did not answer per row
        return None
