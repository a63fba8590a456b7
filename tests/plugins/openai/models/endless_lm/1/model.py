"""Streams "tick" forever, recording each step, until the client leaves."""

import os
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            threading.Thread(target=_tick, args=(request.get_response_sender(),), daemon=True).start()
        return None


def _tick(sender):
    progress = os.environ["OPENAI_TEST_PROGRESS"]
    step = 0
    try:
        while True:
            output = pb_utils.Tensor("text_output", np.array([b"tick "], dtype=np.object_))
            sender.send(pb_utils.InferenceResponse(output_tensors=[output]))
            step += 1
            with open(progress, "a") as file:
                file.write(f"{step}\n")
            time.sleep(0.02)
    except pb_utils.TritonModelException:
        with open(progress, "a") as file:
            file.write("stopped\n")
