"""tritonclient.grpc against a running server: calls every RPC oip-grpc serves.

Run as a subprocess by test_tritonclient_grpc.py: tritonclient.grpc registers
its own copy of Triton's protos (package ``inference``) in protobuf's default
pool, which clashes with ours inside one process. Prints one JSON object.
Usage: python grpc_probe.py HOST:PORT
"""

from __future__ import annotations

import json
import queue
import sys

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException


def _input(name: str, array: np.ndarray, datatype: str) -> grpcclient.InferInput:
    tensor = grpcclient.InferInput(name, list(array.shape), datatype)
    tensor.set_data_from_numpy(array)
    return tensor


def _error(call) -> str:
    try:
        call()
    except InferenceServerException as error:
        return f"{error.status()} {error.message()}"
    return "no error"


def probe(client: grpcclient.InferenceServerClient) -> dict:
    out: dict = {}
    out["live"] = client.is_server_live()
    out["ready"] = client.is_server_ready()
    out["model_ready"] = client.is_model_ready("simple")
    out["unknown_model_ready"] = client.is_model_ready("no_such_model")
    meta = client.get_server_metadata(as_json=True)
    out["extensions"] = meta["extensions"]
    out["model_metadata"] = client.get_model_metadata("simple", as_json=True)
    config = client.get_model_config("simple", as_json=True)["config"]
    out["config"] = {"name": config["name"], "max_batch_size": config["max_batch_size"]}

    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.full((1, 16), 3, dtype=np.int32)
    result = client.infer("simple", [_input("INPUT0", a, "INT32"), _input("INPUT1", b, "INT32")])
    out["simple"] = [result.as_numpy("OUTPUT0").tolist(), result.as_numpy("OUTPUT1").tolist()]

    data = np.array([b"a\x00b", b"\xff\xfe\x00", b""], dtype=object)
    result = client.infer("identity_bytes", [_input("INPUT0", data, "BYTES")])
    out["bytes_roundtrip"] = [x.hex() for x in result.as_numpy("OUTPUT0")]

    half = np.array([1.5, -2.25, 65504.0], dtype=np.float16)
    result = client.infer("identity_fp16", [_input("INPUT0", half, "FP16")])
    out["fp16"] = result.as_numpy("OUTPUT0").astype(float).tolist()

    text = np.array([[str(i).encode() for i in range(16)]], dtype=object)
    result = client.infer("simple_string", [_input("INPUT0", text, "BYTES"), _input("INPUT1", text, "BYTES")])
    out["simple_string"] = [x.decode() for x in result.as_numpy("OUTPUT0").reshape(-1)]

    out["stream"] = stream(client, a, b)
    stats = client.get_inference_statistics("simple", as_json=True)["model_stats"][0]
    out["stats"] = {
        "name": stats["name"],
        "version": stats["version"],
        "inference_count": int(stats["inference_count"]),
        "success_count": int(stats["inference_stats"]["success"]["count"]),
    }
    out["all_stats_names"] = sorted(
        s["name"] for s in client.get_inference_statistics(as_json=True)["model_stats"]
    )
    out["errors"] = {
        "unknown_model": _error(lambda: client.infer("no_such_model", [_input("INPUT0", a, "INT32")])),
        "wrong_shape": _error(
            lambda: client.infer(
                "simple",
                [
                    _input("INPUT0", np.zeros((1, 3), np.int32), "INT32"),
                    _input("INPUT1", np.zeros((1, 3), np.int32), "INT32"),
                ],
            )
        ),
        "metadata_unknown": _error(lambda: client.get_model_metadata("no_such_model")),
        "stats_unknown": _error(lambda: client.get_inference_statistics("no_such_model")),
        # Client shared memory is off by default: Triton answers UNSUPPORTED, gRPC UNIMPLEMENTED.
        "unimplemented": _error(lambda: client.unregister_system_shared_memory()),
    }
    return out


def stream(client: grpcclient.InferenceServerClient, a: np.ndarray, b: np.ndarray) -> dict:
    answers: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    inputs = [_input("INPUT0", a, "INT32"), _input("INPUT1", b, "INT32")]
    for index in range(3):
        client.async_stream_infer("simple", inputs, request_id=f"ok-{index}")
    client.async_stream_infer("no_such_model", inputs, request_id="bad")
    ids, errors = [], []
    for _ in range(4):
        result, error = answers.get(timeout=10)
        if error is not None:
            errors.append(error.message())
        else:
            ids.append(result.get_response().id)
            assert result.as_numpy("OUTPUT0").tolist() == (a + b).tolist()
    client.stop_stream()
    return {"ids": sorted(ids), "errors": errors}


if __name__ == "__main__":
    with grpcclient.InferenceServerClient(sys.argv[1]) as grpc_client:
        print(json.dumps(probe(grpc_client)))
