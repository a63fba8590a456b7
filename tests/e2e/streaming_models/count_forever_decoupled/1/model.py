import itertools
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            progress = pb_utils.get_input_tensor_by_name(request, "PROGRESS_FILE")
            path = progress.as_numpy()[0].decode()
            args = (request, request.get_response_sender(), path)
            threading.Thread(target=_count, args=args, daemon=True).start()


def _count(request, sender, path):
    try:
        for index in itertools.count(1):
            if request.is_cancelled():
                break
            with open(path, "a") as progress:
                progress.write(f"{index}\n")
            output = pb_utils.Tensor("INDEX", np.array([index], dtype=np.int32))
            sender.send(pb_utils.InferenceResponse(output_tensors=[output]))
            time.sleep(0.02)
    except pb_utils.TritonModelException:
        pass  # sent after the client left
    finally:
        with open(path, "a") as progress:
            progress.write("stopped\n")
