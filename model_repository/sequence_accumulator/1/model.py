"""Running sum per sequence, written for Triton's python backend.

The sequence batcher adds the control inputs START, END, READY and CORRID
(see config.pbtxt); ``request.correlation_id()`` and ``request.flags()``
say the same. A request whose READY is 0 fills an empty batch position and
changes nothing. FLAGS answers ``request.flags()`` (1: start, 2: end),
BATCH_ROWS how many requests the call held. Two requests of one sequence in
one call would break the running sum: the model refuses such a call.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


def _value(request, name):
    return pb_utils.get_input_tensor_by_name(request, name).as_numpy().reshape(-1)[0]


def _int32(value):
    """Wraps around as INT32 arithmetic does (perf_analyzer sends random INT32 values)."""
    return (value + 2**31) % 2**32 - 2**31


class TritonPythonModel:
    def initialize(self, args):
        self.sums = {}

    def execute(self, requests):
        ready = [_value(r, "CORRID").decode() for r in requests if _value(r, "READY")]
        if len(set(ready)) != len(ready):
            raise pb_utils.TritonModelException(f"two requests of one sequence in one call: {ready}")
        return [self._one(request, len(requests)) for request in requests]

    def _one(self, request, rows):
        key = _value(request, "CORRID").decode()
        ready = bool(_value(request, "READY"))
        if ready and key != str(request.correlation_id()):
            error = pb_utils.TritonError(
                f"CORRID {key} differs from correlation_id {request.correlation_id()}"
            )
            return pb_utils.InferenceResponse(error=error)
        if _value(request, "START"):
            self.sums[key] = 0
        total = _int32(self.sums.get(key, 0) + (int(_value(request, "INPUT")) if ready else 0))
        if ready:
            self.sums[key] = total
        if _value(request, "END"):
            self.sums.pop(key, None)
        shape = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy().shape
        outputs = [
            pb_utils.Tensor("OUTPUT", np.full(shape, total, dtype=np.int32)),
            pb_utils.Tensor("FLAGS", np.full(shape, request.flags(), dtype=np.int32)),
            pb_utils.Tensor("BATCH_ROWS", np.full(shape, rows, dtype=np.int32)),
        ]
        return pb_utils.InferenceResponse(output_tensors=outputs)
