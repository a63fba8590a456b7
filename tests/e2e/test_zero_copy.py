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

import tracemalloc

import numpy as np
import pytest

from modelplatform import InferenceResponse, Tensor
from modelplatform.testing import ServerProcess
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.rest.codec import Limits
from modelplatform_oip.rpc.tensors import decode_request, encode_response

from ..conftest import MODEL_REPOSITORY
from ..http_wire import binary_infer, peak_rss

MiB = 1024 * 1024
SIZE = 16 * MiB
#: Allowance for everything that is not the tensor (buffers, allocator slack).
SLACK = 6 * MiB


@pytest.fixture(scope="module")
def identity_server():
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "identity_fp32")
    with ServerProcess(*args) as process:
        yield process


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
        response = InferenceResponse(
            "identity_fp32", "1", [Tensor("OUTPUT0", "FP32", tensor.shape, tensor.data)]
        )
        encoded = encode_response(response)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < SIZE + MiB, f"decode+encode traced {peak / MiB:.1f} MiB for a 16 MiB tensor"
    assert encoded.raw_output_contents[0] == message.raw_input_contents[0]
