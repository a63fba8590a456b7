"""Turns what a user model returned into typed output tensors."""

from __future__ import annotations

from typing import Any

import numpy as np

from modelplatform import InvalidArgument, ModelConfig, Tensor
from modelplatform.datatypes import as_bytes_array, numpy_dtype


class OutputTypes:
    """A configuration's declared outputs, with the numpy type each is cast to found once
    (at load), not per response."""

    def __init__(self, config: ModelConfig) -> None:
        self._model = config.name
        #: (name, datatype, numpy dtype; None for BYTES and BF16, which are not cast).
        self._declared = tuple(
            (
                spec.name,
                spec.datatype,
                None if spec.datatype in ("BYTES", "BF16") else numpy_dtype(spec.datatype),
            )
            for spec in config.outputs
        )
        self._names = frozenset(spec.name for spec in config.outputs)

    def tensors(self, outputs: Any) -> list[Tensor]:
        """Declared outputs come first in declaration order, cast to their datatype."""
        if not isinstance(outputs, dict):
            raise InvalidArgument(
                f"model '{self._model}': infer() must return a dict, got {type(outputs).__name__}"
            )
        tensors = []
        for name, datatype, dtype in self._declared:  # a loop: no comprehension's frame per response
            if name in outputs:
                value = outputs[name]
                if (
                    dtype is not None and type(value) is np.ndarray and value.dtype == dtype
                ):  # typed: no frame
                    tensors.append(Tensor(name, datatype, value.shape, value))
                else:
                    tensors.append(self._typed(name, datatype, dtype, value))
        if len(tensors) == len(outputs):  # every output declared (output names are unique)
            return tensors
        for name, value in outputs.items():
            if name not in self._names:
                tensors.append(Tensor.from_array(name, _plain(np.asarray(value))))
        return tensors

    def _typed(self, name: str, datatype: str, dtype: np.dtype | None, value: Any) -> Tensor:
        array = value if type(value) is np.ndarray else np.asarray(value)
        if datatype == "BYTES":
            array = as_bytes_array(array)
        elif dtype is not None and array.dtype != dtype:
            if not np.can_cast(array.dtype, dtype, casting="same_kind"):
                raise InvalidArgument(
                    f"model '{self._model}': output '{name}' is {array.dtype}, declared {datatype}"
                )
            array = array.astype(dtype)
        return Tensor(name, datatype, array.shape, array)


def _plain(array: np.ndarray) -> np.ndarray:
    return as_bytes_array(array) if array.dtype.kind in ("U", "S", "O") else array
