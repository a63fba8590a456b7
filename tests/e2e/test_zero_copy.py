"""A 16 MiB tensor through identity_fp32 is not copied on the server's side.

HTTP binary: measured from outside, as the server process's peak resident
memory (VmHWM) over a burst of 16 MiB requests against a baseline taken
after start-up. The body is received into one buffer, the model gets a view
of it, and the response is written from that same memory: the peak may grow
by one body, not two. gRPC raw: protobuf hands over a field as a fresh bytes
object and serialises its own copy, so the test measures only our part,
in-process with tracemalloc: decoding and encoding add no copy of their own.
"""

from __future__ import annotations

import http.client
import json
import tracemalloc

import numpy as np
import pytest

from modelplatform import InferenceResponse, Tensor
from modelplatform.testing import ServerProcess
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.rest.codec import Limits
from modelplatform_oip.rpc.tensors import decode_request, encode_response

from ..conftest import MODEL_REPOSITORY

MiB = 1024 * 1024
SIZE = 16 * MiB
#: Allowance for everything that is not the tensor (buffers, allocator slack).
SLACK = 6 * MiB


@pytest.fixture(scope="module")
def identity_server():
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "identity_fp32")
    with ServerProcess(*args) as process:
        yield process


def peak_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc status")


def binary_infer(port: int, data: np.ndarray) -> np.ndarray:
    header = json.dumps({
        "inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [data.size],
                    "parameters": {"binary_data_size": data.nbytes}}],
        "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}],
    }).encode()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request(
            "POST", "/v2/models/identity_fp32/infer", body=header + data.tobytes(),
            headers={"Inference-Header-Content-Length": str(len(header))},
        )
        reply = connection.getresponse()
        body = reply.read()
        assert reply.status == 200, body[:200]
        length = int(reply.getheader("Inference-Header-Content-Length"))
    finally:
        connection.close()
    assert json.loads(body[:length])["outputs"][0]["parameters"]["binary_data_size"] == data.nbytes
    return np.frombuffer(body[length:], dtype=np.float32)


def test_http_binary_16mib_holds_one_copy_at_most(identity_server):
    pid = identity_server.process.pid
    small = np.arange(256, dtype=np.float32)
    assert np.array_equal(binary_infer(identity_server.http_port, small), small)
    baseline = peak_rss(pid)
    data = np.random.default_rng(1).random(SIZE // 4, dtype=np.float32)
    for _ in range(4):
        assert np.array_equal(binary_infer(identity_server.http_port, data), data)
    grown = peak_rss(pid) - baseline
    assert grown < SIZE + SLACK, f"peak RSS grew by {grown / MiB:.1f} MiB for a 16 MiB tensor"


async def test_grpc_raw_decode_and_encode_copy_nothing():
    data = np.random.default_rng(2).random(SIZE // 4, dtype=np.float32)
    message = pb.ModelInferRequest(model_name="identity_fp32")
    message.inputs.add(name="INPUT0", datatype="FP32", shape=[data.size])
    message.raw_input_contents.append(data.tobytes())
    limits = Limits(max_tensor_elements=64 * MiB, max_bytes_element=MiB)
    tracemalloc.start()
    try:
        request = decode_request(message, limits)  # protobuf's field access: the one copy
        tensor = request.inputs[0]
        response = InferenceResponse("identity_fp32", "1", [Tensor("OUTPUT0", "FP32", tensor.shape, tensor.data)])
        encoded = encode_response(response)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < SIZE + MiB, f"decode+encode traced {peak / MiB:.1f} MiB for a 16 MiB tensor"
    assert encoded.raw_output_contents[0] == message.raw_input_contents[0]
