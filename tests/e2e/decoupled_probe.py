"""tritonclient.grpc streaming against decoupled and generator models; prints one JSON object.

Run as a subprocess by test_decoupled_grpc.py: tritonclient.grpc registers its
own copy of Triton's protos in protobuf's default pool, which clashes with
ours inside one process. Usage: python decoupled_probe.py HOST:PORT
"""

from __future__ import annotations

import json
import queue
import sys

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

WAIT = 30  # seconds for one response: generous on a loaded machine


def _text(words: str) -> grpcclient.InferInput:
    tensor = grpcclient.InferInput("text_input", [1], "BYTES")
    tensor.set_data_from_numpy(np.array([words.encode()], dtype=np.object_))
    return tensor


def _count(count: int) -> grpcclient.InferInput:
    tensor = grpcclient.InferInput("COUNT", [1], "INT32")
    tensor.set_data_from_numpy(np.array([count], dtype=np.int32))
    return tensor


def _seen(result: grpcclient.InferResult, output: str) -> dict:
    response = result.get_response()
    value = result.as_numpy(output) if response.outputs else None
    if value is not None:
        value = [v.decode() if isinstance(v, bytes) else int(v) for v in value.reshape(-1)]
    return {
        "id": response.id,
        "value": value,
        "final": response.parameters["triton_final_response"].bool_param,
    }


def _until_final(results: queue.Queue, output: str, finals: int = 1) -> list:
    seen = []
    while finals:
        result, error = results.get(timeout=WAIT)
        if error is not None:
            seen.append({"error": error.message()})
            return seen
        seen.append(_seen(result, output))
        finals -= seen[-1]["final"]
    return seen


def _streamed(url: str, send, output: str, finals: int = 1) -> list:
    client = grpcclient.InferenceServerClient(url)
    results: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        send(client)
        return _until_final(results, output, finals)
    finally:
        client.stop_stream()
        client.close()


def _without_empty_final(url: str) -> dict:
    """No opt-in: the words come unflagged and nothing follows them."""
    client = grpcclient.InferenceServerClient(url)
    results: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        client.async_stream_infer("word_stream", [_text("red green")], request_id="plain")
        seen = [_seen(results.get(timeout=WAIT)[0], "text_output") for _ in range(2)]
        try:
            results.get(timeout=1.0)
            extra = True
        except queue.Empty:
            extra = False
        return {"seen": seen, "extra": extra}
    finally:
        client.stop_stream()
        client.close()


def _unary_error(url: str) -> str:
    client = grpcclient.InferenceServerClient(url)
    try:
        client.infer("word_stream", [_text("a b")])
    except InferenceServerException as error:
        return f"{error.status()} {error.message()}"
    finally:
        client.close()
    return "no error"


def probe(url: str) -> dict:
    def words(client):
        client.async_stream_infer(
            "word_stream", [_text("one two three")], request_id="w", enable_empty_final_response=True
        )

    def two_requests(client):
        for request_id, text in (("a", "a1 a2 a3"), ("b", "b1 b2")):
            client.async_stream_infer(
                "word_stream",
                [_text(text)],
                request_id=request_id,
                parameters={"delay_ms": 5},
                enable_empty_final_response=True,
            )

    def counter(client):
        client.async_stream_infer(
            "stream_counter", [_count(3)], request_id="c", enable_empty_final_response=True
        )

    def simple(client):
        inputs = []
        for name in ("INPUT0", "INPUT1"):
            tensor = grpcclient.InferInput(name, [1, 16], "INT32")
            tensor.set_data_from_numpy(np.arange(16, dtype=np.int32).reshape(1, 16))
            inputs.append(tensor)
        client.async_stream_infer("simple", inputs, request_id="s")

    def bad_words(client):
        client.async_stream_infer("word_stream", [_text("x")], parameters={"delay_ms": "soon"})

    return {
        "words": _streamed(url, words, "text_output"),
        "two_requests": _streamed(url, two_requests, "text_output", finals=2),
        "counter": _streamed(url, counter, "INDEX"),
        "simple": _streamed(url, simple, "OUTPUT0"),
        "bad_words": _streamed(url, bad_words, "text_output"),
        "plain": _without_empty_final(url),
        "unary": _unary_error(url),
    }


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1])))
