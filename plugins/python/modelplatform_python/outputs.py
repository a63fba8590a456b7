"""Turns what a user model returned into typed output tensors."""

from __future__ import annotations

from typing import Any

import numpy as np

from modelplatform import InvalidArgument, ModelConfig, Tensor
from modelplatform.datatypes import as_bytes_array, numpy_dtype


def to_tensors(config: ModelConfig, outputs: Any) -> list[Tensor]:
    """Declared outputs come first in declaration order, cast to their datatype."""
    if not isinstance(outputs, dict):
        raise InvalidArgument(
            f"model '{config.name}': infer() must return a dict, got {type(outputs).__name__}"
        )
    tensors = [
        _typed(config.name, spec.name, spec.datatype, outputs[spec.name])
        for spec in config.outputs
        if spec.name in outputs
    ]
    if len(tensors) == len(outputs):  # every output declared (output names are unique)
        return tensors
    declared = {spec.name for spec in config.outputs}
    for name, value in outputs.items():
        if name not in declared:
            array = np.asarray(value)
            tensors.append(Tensor.from_array(name, _plain(array)))
    return tensors


def _typed(model: str, name: str, datatype: str, value: Any) -> Tensor:
    array = np.asarray(value)
    if datatype == "BYTES":
        array = as_bytes_array(array)
    elif datatype != "BF16" and array.dtype != numpy_dtype(datatype):
        target = numpy_dtype(datatype)
        if not np.can_cast(array.dtype, target, casting="same_kind"):
            raise InvalidArgument(f"model '{model}': output '{name}' is {array.dtype}, declared {datatype}")
        array = array.astype(target)
    return Tensor(name, datatype, tuple(array.shape), array)


def _plain(array: np.ndarray) -> np.ndarray:
    return as_bytes_array(array) if array.dtype.kind in ("U", "S", "O") else array
