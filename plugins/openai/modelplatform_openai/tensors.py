"""Values laid out as a model's declared input, and outputs read back as Python values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from modelplatform import InferenceResponse, InvalidArgument, Tensor, TensorSpec
from modelplatform.datatypes import numpy_dtype


def input_tensor(spec: TensorSpec, max_batch_size: int, values: Sequence[Any]) -> Tensor:
    """``values`` in the input's shape: the first variable dimension (the batch one, if any)
    takes them all, any other variable dimension takes 1."""
    shape = laid_out(spec.name, spec.full_shape(max_batch_size), len(values))
    if spec.datatype == "BYTES":
        items = [value.encode() if isinstance(value, str) else value for value in values]
        array = np.empty(len(items), dtype=object)
        array[:] = items
    else:
        array = np.asarray(values, dtype=numpy_dtype(spec.datatype))
    return Tensor(spec.name, spec.datatype, tuple(shape), array.reshape(shape))


def laid_out(name: str, declared: Sequence[int], count: int) -> list[int]:
    shape, taken = [], False
    for size in declared:
        if size == -1 and not taken:
            shape.append(count)
            taken = True
        else:
            shape.append(1 if size == -1 else size)
    if int(np.prod(shape)) != count:
        raise InvalidArgument(f"input '{name}' (dims {list(declared)}) cannot hold {count} value(s)")
    return shape


def first_text(response: InferenceResponse, name: str) -> str | None:
    """The first element of a BYTES output as text; None when the response lacks it."""
    tensor = response.output(name)
    if tensor is None or tensor.data.size == 0:
        return None
    item = tensor.data.reshape(-1)[0]
    return item.decode("utf-8", "replace") if isinstance(item, bytes) else str(item)


def count(response: InferenceResponse, name: str) -> int | None:
    """The sum of an integer output (a token count); None when the response lacks it."""
    tensor = response.output(name)
    if tensor is None or tensor.data.size == 0:
        return None
    if tensor.data.size == 1:  # one count a response: per token, so without numpy's reductions
        return int(tensor.data.reshape(-1)[0])
    return int(np.asarray(tensor.data).astype(np.int64).sum())
