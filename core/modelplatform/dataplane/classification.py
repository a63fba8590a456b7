"""Triton's classification extension: an output's top classes instead of its tensor.

A requested output whose ``classification`` parameter is a count k > 0
(tritonclient's ``class_count=k``, over HTTP and gRPC alike) comes back as
BYTES ``"<value>:<index>"`` or ``"<value>:<index>:<label>"`` strings, the k
highest values first, with labels from the output's ``label_filename``
(models/labels.py). As in Triton (``classification.cc`` and its callers):
for a batching model each batch row is classified on its own (shape
``[batch, k]``, indices within the row), otherwise the whole tensor (shape
``[k]``); k larger than the classes is clamped to them; values are printed
as C++'s ``std::to_string`` prints them (six decimals for floats). Only
integer and FP32/FP64 outputs can be classified: any other type is refused
with Triton's words (2.51 crashes on BYTES; later releases refuse it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from modelplatform.base.errors import InvalidArgument
from modelplatform.base.inference import RequestedOutput, Tensor
from modelplatform.base.model_config import ModelConfig

#: The output parameter naming the count.
CLASSIFICATION = "classification"
_INTEGERS = frozenset({"UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64"})
_FLOATS = frozenset({"FP32", "FP64"})


def requested_count(parameters: Mapping[str, Any]) -> int:
    """The output's ``classification`` count (0: the tensor as it is), checked."""
    count = parameters.get(CLASSIFICATION, 0)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise InvalidArgument(f"output parameter '{CLASSIFICATION}' must be a non-negative integer")
    return count


def check_requested(outputs: Sequence[RequestedOutput], config: ModelConfig) -> None:
    """Refuse, before the model runs, a bad count or a declared output that cannot be classified."""
    for output in outputs:
        if CLASSIFICATION not in output.parameters or not requested_count(output.parameters):
            continue
        spec = config.output_spec(output.name)
        if spec is not None:
            _check_datatype(output.name, spec.datatype)


def classified(tensor: Tensor, count: int, batched: bool, labels: Sequence[str]) -> Tensor:
    """``tensor``'s top ``count`` classes (per batch row when ``batched``) as a BYTES tensor."""
    _check_datatype(tensor.name, tensor.datatype)
    data = np.asarray(tensor.data)
    batch = data.shape[0] if batched and data.ndim > 0 else 0
    rows = data.reshape(max(batch, 1), -1)
    top = min(count, rows.shape[1])
    printed = _float_text if tensor.datatype in _FLOATS else _integer_text
    classes = np.empty((rows.shape[0], top), dtype=object)
    for row_index, row in enumerate(rows):
        for rank, index in enumerate(_top_indices(row, top)):
            text = f"{printed(row[index])}:{index}"
            label = labels[index] if index < len(labels) else ""
            classes[row_index, rank] = (f"{text}:{label}" if label else text).encode()
    shape = (batch, top) if batch else (top,)
    return Tensor(tensor.name, "BYTES", shape, classes.reshape(shape), tensor.parameters)


def _check_datatype(name: str, datatype: str) -> None:
    if datatype not in _INTEGERS and datatype not in _FLOATS:
        raise InvalidArgument(
            f"class result not available for output '{name}' due to unsupported type '{datatype}'"
        )


def _top_indices(row: np.ndarray, top: int) -> list[int]:
    """Indices of the ``top`` highest values, highest first; equal values by index."""
    reversed_order = np.argsort(row[::-1], kind="stable")[::-1]  # ties: the lower index first
    return [len(row) - 1 - int(i) for i in reversed_order[:top]]


def _float_text(value: Any) -> str:
    return f"{float(value):f}"  # std::to_string(float): "%f"


def _integer_text(value: Any) -> str:
    return str(int(value))
