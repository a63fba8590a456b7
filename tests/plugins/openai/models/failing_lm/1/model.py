"""Two tokens, then an error response: a model failing after its stream started."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            for word in (b"one ", b"two "):
                output = pb_utils.Tensor("text_output", np.array([word], dtype=np.object_))
                sender.send(pb_utils.InferenceResponse(output_tensors=[output]))
            error = pb_utils.TritonError("the model ran out of words")
            sender.send(
                pb_utils.InferenceResponse(error=error), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
            )
        return None
