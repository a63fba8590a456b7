"""The client half of the CUDA shared-memory tests, run as its own process.

tritonclient.grpc's generated messages clash with the server's own in one
protobuf pool (both define ``inference.*``), so the tests run the clients
here and read one JSON line back. Usage:

    python cuda_client.py infer PROTOCOL URL MODEL INPUT OUTPUT [WHERE]
    python cuda_client.py refusals HTTP_URL GRPC_URL MODEL
"""

from __future__ import annotations

import json
import sys

import numpy as np

ELEMENTS = 1024
BYTES = ELEMENTS * 4


def _module(protocol: str):
    if protocol == "http":
        import tritonclient.http as module
    else:
        import tritonclient.grpc as module
    return module


def infer(protocol: str, url: str, model: str, input_name: str, output_name: str, where: str = "") -> dict:
    from tritonclient.utils import cuda_shared_memory as cudashm

    module = _module(protocol)
    client = module.InferenceServerClient(url)
    client.unregister_cuda_shared_memory()
    values = np.random.default_rng().standard_normal(ELEMENTS).astype(np.float32)
    source = cudashm.create_shared_memory_region("in", BYTES, 0)
    target = cudashm.create_shared_memory_region("out", BYTES, 0)
    try:
        cudashm.set_shared_memory_region(source, [values])
        client.register_cuda_shared_memory("in", cudashm.get_raw_handle(source), 0, BYTES)
        client.register_cuda_shared_memory("out", cudashm.get_raw_handle(target), 0, BYTES)
        tensor = module.InferInput(input_name, [ELEMENTS], "FP32")
        tensor.set_shared_memory("in", BYTES)
        output = module.InferRequestedOutput(output_name)
        output.set_shared_memory("out", BYTES)
        outputs = [output] + ([module.InferRequestedOutput(where)] if where else [])
        result = client.infer(model, [tensor], outputs=outputs)
        answer = cudashm.get_contents_as_numpy(target, np.float32, [ELEMENTS])
        after = cudashm.get_contents_as_numpy(source, np.float32, [ELEMENTS])
        info = [w.decode() for w in result.as_numpy(where)] if where else []
        client.unregister_cuda_shared_memory()
        return {"values": values.tolist(), "answer": answer.tolist(), "after": after.tolist(), "info": info}
    finally:
        cudashm.destroy_shared_memory_region(source)
        cudashm.destroy_shared_memory_region(target)


def refusals(http_url: str, grpc_url: str, model: str) -> dict:
    """Every refusal's message, by case; the test checks each names the region."""
    from tritonclient.utils import InferenceServerException
    from tritonclient.utils import cuda_shared_memory as cudashm

    found: dict = {}

    def refused(case: str, call) -> None:
        try:
            call()
        except InferenceServerException as error:
            found[case] = {"message": str(error), "status": str(error.status())}
        else:
            found[case] = None

    http_module, grpc_module = _module("http"), _module("grpc")
    http = http_module.InferenceServerClient(http_url)
    grpc = grpc_module.InferenceServerClient(grpc_url)
    http.unregister_cuda_shared_memory()
    refused("http bad handle", lambda: http.register_cuda_shared_memory("bogus", b"\x01" * 64, 0, BYTES))
    refused("grpc bad handle", lambda: grpc.register_cuda_shared_memory("bogus", b"\x01" * 64, 0, BYTES))
    region = cudashm.create_shared_memory_region("small", BYTES, 0)
    try:
        handle = cudashm.get_raw_handle(region)
        refused("http no device", lambda: http.register_cuda_shared_memory("far", handle, 7, BYTES))
        http.register_cuda_shared_memory("small", handle, 0, BYTES)
        for name, module, client in (("http", http_module, http), ("grpc", grpc_module, grpc)):
            past_end = module.InferInput("INPUT0", [ELEMENTS], "FP32")
            past_end.set_shared_memory("small", BYTES, offset=16)
            refused(f"{name} past the end", lambda c=client, t=past_end: c.infer(model, [t]))
            wrong_size = module.InferInput("INPUT0", [ELEMENTS], "FP32")
            wrong_size.set_shared_memory("small", BYTES - 4)
            refused(f"{name} wrong size", lambda c=client, t=wrong_size: c.infer(model, [t]))
        http.unregister_cuda_shared_memory("small")
        found["status after unregister"] = http.get_cuda_shared_memory_status()
        gone = http_module.InferInput("INPUT0", [ELEMENTS], "FP32")
        gone.set_shared_memory("small", BYTES)
        refused("http unregistered", lambda: http.infer(model, [gone]))
        http.register_cuda_shared_memory("again", handle, 0, BYTES)  # the handle was closed
        http.unregister_cuda_shared_memory()
    finally:
        cudashm.destroy_shared_memory_region(region)
    return found


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    print(json.dumps(infer(*arguments) if command == "infer" else refusals(*arguments)))
