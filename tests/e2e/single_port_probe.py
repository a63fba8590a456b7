"""tritonclient.grpc against a ``--single-port`` server's HTTP port. Prints one JSON object.

Run as a subprocess by test_single_port.py: tritonclient.grpc registers its
own copy of Triton's protos, which clashes with ours inside one process.
Usage: python single_port_probe.py HOST:PORT
"""

from __future__ import annotations

import json
import queue
import sys

import numpy as np
import tritonclient.grpc as grpcclient

#: 16 MiB of FP32, each way.
LARGE_ELEMENTS = 4 * 1024 * 1024


def _input(name: str, array: np.ndarray, datatype: str) -> grpcclient.InferInput:
    tensor = grpcclient.InferInput(name, list(array.shape), datatype)
    tensor.set_data_from_numpy(array)
    return tensor


def probe(client: grpcclient.InferenceServerClient) -> dict:
    out: dict = {
        "live": client.is_server_live(),
        "ready": client.is_server_ready(),
        "model_ready": client.is_model_ready("simple"),
        "server_name": client.get_server_metadata(as_json=True)["name"],
        "model_inputs": [i["name"] for i in client.get_model_metadata("simple", as_json=True)["inputs"]],
    }
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.full((1, 16), 3, dtype=np.int32)
    result = client.infer("simple", [_input("INPUT0", a, "INT32"), _input("INPUT1", b, "INT32")])
    out["simple"] = [result.as_numpy("OUTPUT0").tolist(), result.as_numpy("OUTPUT1").tolist()]
    large = np.random.default_rng(7).random(LARGE_ELEMENTS, dtype=np.float32)
    echoed = client.infer("identity_fp32", [_input("INPUT0", large, "FP32")]).as_numpy("OUTPUT0")
    out["large_equal"] = bool(echoed.shape == large.shape and np.array_equal(echoed, large))
    out["stream"] = stream(client, a, b)
    return out


def stream(client: grpcclient.InferenceServerClient, a: np.ndarray, b: np.ndarray) -> list[str]:
    """Three requests on one ModelStreamInfer stream: the ids of the right answers."""
    answers: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    inputs = [_input("INPUT0", a, "INT32"), _input("INPUT1", b, "INT32")]
    for index in range(3):
        client.async_stream_infer("simple", inputs, request_id=f"s{index}")
    ids = []
    for _ in range(3):
        result, error = answers.get(timeout=30)
        if error is None and result.as_numpy("OUTPUT0").tolist() == (a + b).tolist():
            ids.append(result.get_response().id)
    client.stop_stream()
    return sorted(ids)


if __name__ == "__main__":
    with grpcclient.InferenceServerClient(sys.argv[1]) as grpc_client:
        print(json.dumps(probe(grpc_client)))
