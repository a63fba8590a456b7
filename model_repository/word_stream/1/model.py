"""A decoupled model written for Triton's python backend: it streams the words it is given.

``execute`` starts one thread per request and returns at once; the thread
sends each word as a response through the request's response sender, then
the final flag alone. When the client goes away the sender is cancelled and
the thread stops at its next word.
"""

import json
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

MAX_WORDS = 1000
MAX_DELAY_MS = 1000


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            try:
                words, delay = _words(request), _delay(request)
            except ValueError as error:
                error = pb_utils.TritonError(str(error), pb_utils.TritonError.INVALID_ARG)
                sender.send(
                    pb_utils.InferenceResponse(error=error),
                    flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
                )
                continue
            threading.Thread(target=_send_words, args=(sender, words, delay), daemon=True).start()
        return None  # a decoupled model answers through its senders


def _words(request):
    text = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy().reshape(-1)[0]
    words = (text.decode() if isinstance(text, bytes) else str(text)).split()
    if len(words) > MAX_WORDS:
        raise ValueError(f"text_input has {len(words)} words, over the limit of {MAX_WORDS}")
    return words


def _delay(request):
    delay = json.loads(request.parameters() or "{}").get("delay_ms", 10)
    is_number = isinstance(delay, (int, float)) and not isinstance(delay, bool)
    if not is_number or not 0 <= delay <= MAX_DELAY_MS:
        raise ValueError(f"parameter delay_ms must be a number 0..{MAX_DELAY_MS}, got {delay!r}")
    return delay / 1000


def _send_words(sender, words, delay):
    try:
        for word in words:
            time.sleep(delay)
            output = pb_utils.Tensor("text_output", np.array([word.encode()], dtype=np.object_))
            sender.send(pb_utils.InferenceResponse(output_tensors=[output]))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    except pb_utils.TritonModelException:
        pass  # the client went away: nothing left to send to
