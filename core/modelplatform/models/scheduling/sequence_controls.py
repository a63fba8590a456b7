"""The control tensors the sequence batcher adds to each request, as Triton writes them.

START is true on a sequence's first request, END on its last, READY on every
real request (false on the filler a ``direct`` batch puts in an empty slot),
CORRID carries the sequence id. Each is one element, shaped ``[1]``, or
``[1, 1]`` for a batching model (a batch dimension of one). The flag tensors
are built once per model and shared: backends must not write into inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from modelplatform.base.dtypes import NUMPY_DTYPES
from modelplatform.base.errors import InvalidArgument
from modelplatform.base.inference import Tensor
from modelplatform.base.model_config import SequenceControl
from modelplatform.models.scheduling.sequence_ids import SequenceId


class SequenceControls:
    """Builds a request's control inputs from its flags and sequence id."""

    def __init__(self, model: str, controls: Sequence[SequenceControl], batching: bool) -> None:
        self._model = model
        self._shape = (1, 1) if batching else (1,)
        self._flags = {c.kind: (c, self._flag_tensors(c)) for c in controls if c.kind != "CORRID"}
        self._corrid = next((c for c in controls if c.kind == "CORRID"), None)

    def tensors(self, sequence_id: SequenceId, start: bool, end: bool, ready: bool = True) -> list[Tensor]:
        """The controls the model configured, in no particular order (inputs are looked up by name)."""
        values = {"START": start, "END": end, "READY": ready}
        tensors = [pair[values[kind]] for kind, (_, pair) in self._flags.items()]
        if self._corrid is not None:
            tensors.append(self._corrid_tensor(sequence_id if ready else 0))
        return tensors

    def _flag_tensors(self, control: SequenceControl) -> tuple[Tensor, Tensor]:
        dtype = NUMPY_DTYPES[control.datatype]
        false, true = (np.full(self._shape, v, dtype=dtype) for v in control.false_true)
        for array in (false, true):
            array.flags.writeable = False
        return (
            Tensor(control.input_name, control.datatype, self._shape, false),
            Tensor(control.input_name, control.datatype, self._shape, true),
        )

    def _corrid_tensor(self, sequence_id: SequenceId) -> Tensor:
        control = self._corrid
        assert control is not None
        if control.datatype == "BYTES":
            text = sequence_id if isinstance(sequence_id, str) else str(sequence_id)
            array = np.full(self._shape, text.encode(), dtype=object)
        elif isinstance(sequence_id, str):
            raise InvalidArgument(
                f"model '{self._model}' takes a numeric sequence id ({control.datatype} "
                f"control '{control.input_name}'), got the string '{sequence_id}'"
            )
        else:  # as Triton's memcpy of the id's low bytes: a narrower type keeps the low bits
            array = np.full(self._shape, sequence_id, dtype=np.uint64).astype(NUMPY_DTYPES[control.datatype])
        return Tensor(control.input_name, control.datatype, self._shape, array)
