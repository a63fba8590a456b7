"""tritonclient.grpc streams with and without ``triton_grpc_error: true``; prints one JSON object.

Run as a subprocess by test_stream_error_status.py: tritonclient.grpc registers
its own copy of Triton's protos in protobuf's default pool, which clashes with
ours inside one process. Usage: python stream_error_probe.py HOST:PORT
"""

from __future__ import annotations

import json
import queue
import sys

import numpy as np
import tritonclient.grpc as grpcclient

WAIT = 30  # seconds for one callback: generous on a loaded machine


def _simple_inputs() -> list[grpcclient.InferInput]:
    inputs = []
    for name in ("INPUT0", "INPUT1"):
        tensor = grpcclient.InferInput(name, [1, 16], "INT32")
        tensor.set_data_from_numpy(np.ones((1, 16), np.int32))
        inputs.append(tensor)
    return inputs


def _seen(results: queue.Queue) -> dict:
    result, error = results.get(timeout=WAIT)
    if error is not None:
        return {"status": str(error.status()), "message": error.message()}
    return {"id": result.get_response().id}


def _stream(url: str, headers: dict | None) -> list[dict]:
    """simple "a", then an unknown model "b", then simple "c", each after the last callback."""
    client = grpcclient.InferenceServerClient(url)
    results: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: results.put((result, error)), headers=headers)
    seen: list[dict] = []
    try:
        for request_id, model in (("a", "simple"), ("b", "no_such_model"), ("c", "simple")):
            client.async_stream_infer(model, _simple_inputs(), request_id=request_id)
            seen.append(_seen(results))
            if "status" in seen[-1] and seen[-1]["status"] != "None":
                break  # the stream ended with a status: nothing more will come
        return seen
    finally:
        client.stop_stream()
        client.close()


if __name__ == "__main__":
    url = sys.argv[1]
    print(
        json.dumps(
            {
                "error_mode": _stream(url, {"triton_grpc_error": "true"}),
                "default_mode": _stream(url, None),
            }
        )
    )
