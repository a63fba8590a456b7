"""tritonclient.grpc against a stateful model, in a child process; prints what it saw as JSON.

tritonclient.grpc bundles Triton's protos, which cannot share protobuf's
default pool with ours in one process (docs/protocols/oip-grpc.md), so
test_sequence_batching.py runs this file: ``python sequence_grpc_probe.py URL MODEL``.
"""

from __future__ import annotations

import json
import queue
import sys

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException


def _input(value: int) -> grpcclient.InferInput:
    tensor = grpcclient.InferInput("INPUT", [1, 1], "INT32")
    tensor.set_data_from_numpy(np.array([[value]], dtype=np.int32))
    return tensor


def unary_sums(client: grpcclient.InferenceServerClient, model: str) -> dict[str, list[int]]:
    sums: dict[str, list[int]] = {}
    for sequence_id in (2**63 - 1, "grpc-session"):
        for index, value in enumerate([10, 20, 30]):
            result = client.infer(
                model,
                [_input(value)],
                sequence_id=sequence_id,
                sequence_start=index == 0,
                sequence_end=index == 2,
            )
            sums.setdefault(str(sequence_id), []).append(int(result.as_numpy("OUTPUT").item()))
    return sums


def streamed(client: grpcclient.InferenceServerClient, model: str, sequences: dict) -> dict[str, list[int]]:
    """Every step of every sequence sent at once, interleaved, on one stream; totals by step."""
    answers: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    steps = len(next(iter(sequences.values())))
    try:
        for step in range(steps):
            for sequence_id, values in sequences.items():
                client.async_stream_infer(
                    model,
                    [_input(values[step])],
                    request_id=f"{sequence_id}|{step}",
                    sequence_id=sequence_id,
                    sequence_start=step == 0,
                    sequence_end=step == steps - 1,
                )
        received = [answers.get(timeout=30) for _ in range(steps * len(sequences))]
    finally:
        client.stop_stream()
    by_sequence: dict[str, list[tuple[int, int]]] = {}
    for result, error in received:
        if error is not None:
            raise error
        sequence_id, step = result.get_response().id.split("|")
        by_sequence.setdefault(sequence_id, []).append((int(step), int(result.as_numpy("OUTPUT").item())))
    return {key: [total for _, total in sorted(value)] for key, value in by_sequence.items()}


def negative_id(client: grpcclient.InferenceServerClient, model: str) -> list[int]:
    """An int64 id below 0: Triton reads it as the uint64 of the same bits."""
    result = client.infer(model, [_input(9)], sequence_id=-1, sequence_start=True, sequence_end=True)
    return [int(result.as_numpy("OUTPUT").item()), int(result.as_numpy("FLAGS").item())]


def refusal(client: grpcclient.InferenceServerClient, model: str) -> dict[str, str]:
    try:
        client.infer(model, [_input(1)], sequence_id="never-started")
    except InferenceServerException as error:
        return {"status": str(error.status()), "message": error.message()}
    return {}


def uint64_refusal(url: str, model: str) -> dict[str, str]:
    request = service_pb2.ModelInferRequest(model_name=model)
    tensor = request.inputs.add(name="INPUT", datatype="INT32", shape=[1, 1])
    tensor.contents.int_contents.append(1)
    request.parameters["sequence_id"].uint64_param = 5
    request.parameters["sequence_start"].bool_param = True
    with grpc.insecure_channel(url) as channel:
        try:
            service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request, timeout=10)
        except grpc.RpcError as error:
            return {"code": error.code().name, "details": error.details()}
    return {}


def main() -> None:
    url, model = sys.argv[1], sys.argv[2]
    client = grpcclient.InferenceServerClient(url)
    sequences = {1001: [1, 2, 3, 4, 5, 6], 1002: [100, -1, -2, -3, -4, -5], "s-1003": [7, 7, 7, 7, 7, 7]}
    report = {
        "extensions": list(client.get_server_metadata().extensions),
        "unary": unary_sums(client, model),
        "stream": streamed(client, model, sequences),
        "pipelined": streamed(client, model, {"one": list(range(1, 21))}),
        "refusal": refusal(client, model),
        "negative_id": negative_id(client, model),
        "uint64": uint64_refusal(url, model),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
