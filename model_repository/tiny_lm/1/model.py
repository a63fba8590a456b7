"""A tiny deterministic language model (numpy), streaming one word per response.

A fixed random bigram table over a small vocabulary: each next word is drawn
from the row of the previous one, softened by ``temperature`` (0: the most
likely word) and cut by ``top_p``. The random draws are seeded by ``seed``
and the prompt, so the same request always gives the same text. Generation
stops after ``max_tokens`` words or where the text reaches a ``stop``
sequence (the text before it is sent, the sequence is not). When the client
goes away the response sender is cancelled and the thread stops.
"""

import json
import threading
import time
import zlib

import numpy as np
import triton_python_backend_utils as pb_utils

VOCABULARY = (
    "the a model server streams tokens quickly and every request gets its answer while "
    "numpy computes small tables of words so clients see text arrive one piece at time "
    "with seeds giving same output each run because tables are fixed at load today"
).split()
DEFAULT_MAX_TOKENS = 16
MAX_TOKENS = 1024
MAX_DELAY_MS = 1000


class TritonPythonModel:
    def initialize(self, args):
        size = len(VOCABULARY)
        self.logits = np.random.default_rng(2026).normal(0.0, 2.0, size=(size, size))

    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            try:
                prompt, options = _prompt(request), _options(request)
            except ValueError as error:
                error = pb_utils.TritonError(str(error), pb_utils.TritonError.INVALID_ARG)
                sender.send(
                    pb_utils.InferenceResponse(error=error),
                    flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
                )
                continue
            args = (sender, self.logits, prompt, options)
            threading.Thread(target=_generate, args=args, daemon=True).start()
        return None  # a decoupled model answers through its senders


def _prompt(request):
    text = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy().reshape(-1)[0]
    return text.decode() if isinstance(text, bytes) else str(text)


def _options(request):
    given = json.loads(request.parameters() or "{}")
    stop = given.get("stop", "[]")
    stop = json.loads(stop) if isinstance(stop, str) and stop.startswith("[") else [stop] if stop else []
    options = {
        "max_tokens": _number(given, "max_tokens", DEFAULT_MAX_TOKENS, 1, MAX_TOKENS, int),
        "temperature": _number(given, "temperature", 1.0, 0.0, 2.0, float),
        "top_p": _number(given, "top_p", 1.0, 0.0, 1.0, float),
        "seed": _number(given, "seed", 0, -(1 << 63), (1 << 63) - 1, int),
        "delay": _number(given, "delay_ms", 0, 0, MAX_DELAY_MS, float) / 1000,
        "stop": [s for s in stop if isinstance(s, str) and s],
    }
    return options


def _number(given, name, default, low, high, kind):
    value = given.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ValueError(f"parameter {name} must be a number {low}..{high}, got {value!r}")
    if kind is int and value != int(value):
        raise ValueError(f"parameter {name} must be an integer, got {value!r}")
    return kind(value)


def _next_word(logits, previous, rng, temperature, top_p):
    row = logits[previous]
    if temperature == 0:
        return int(np.argmax(row))
    weights = np.exp((row - row.max()) / temperature)
    weights /= weights.sum()
    order = np.argsort(-weights)
    kept = order[: int(np.searchsorted(np.cumsum(weights[order]), top_p) + 1)]
    return int(rng.choice(kept, p=weights[kept] / weights[kept].sum()))


def _generate(sender, logits, prompt, options):
    rng = np.random.default_rng([options["seed"] & ((1 << 64) - 1), zlib.crc32(prompt.encode())])
    previous = zlib.crc32(prompt.encode()) % len(VOCABULARY)
    prompt_tokens = len(prompt.split())
    text = ""
    try:
        for _ in range(options["max_tokens"]):
            time.sleep(options["delay"])
            previous = _next_word(logits, previous, rng, options["temperature"], options["top_p"])
            piece = (" " if text else "") + VOCABULARY[previous]
            piece, stopped = _before_stop(text, piece, options["stop"])
            text += piece
            if piece or not stopped:
                sender.send(_response(piece, prompt_tokens))
            if stopped:
                break
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    except pb_utils.TritonModelException:
        pass  # the client went away: nothing left to send to


def _before_stop(text, piece, stops):
    """The piece cut where the text reaches a stop sequence, and whether it did."""
    whole = text + piece
    found = [whole.find(stop, max(0, len(text) - len(stop) + 1)) for stop in stops]
    found = [index for index in found if index >= 0]
    if not found:
        return piece, False
    return whole[len(text) : min(found)], True


def _response(piece, prompt_tokens):
    return pb_utils.InferenceResponse(
        output_tensors=[
            pb_utils.Tensor("text_output", np.array([piece.encode()], dtype=np.object_)),
            pb_utils.Tensor("num_input_tokens", np.array([prompt_tokens], dtype=np.int32)),
            pb_utils.Tensor("num_output_tokens", np.array([1], dtype=np.int32)),
        ]
    )
