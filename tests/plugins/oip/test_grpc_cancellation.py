"""A cancelled call, a missed deadline or an abandoned stream leaves no work behind.

The `slow` model sleeps (asynchronously) and then touches a marker file; if
the server kept working for a client that is gone, the marker would appear.
"""

from __future__ import annotations

import time
from pathlib import Path

import grpc
import numpy as np
import pytest

from modelplatform.testing import ServerProcess
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc

from .slow_model import add_slow_model


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory):
    repository = tmp_path_factory.mktemp("repository")
    add_slow_model(repository, instances=2)
    with ServerProcess("--model-repository", str(repository)) as process:
        process.version_dir = repository / "slow" / "1"
        yield process


@pytest.fixture(scope="module")
def stub(slow_server):
    with grpc.insecure_channel(slow_server.grpc_url) as channel:
        yield pb_grpc.GRPCInferenceServiceStub(channel)


def _request(seconds: float) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="slow")
    request.inputs.add(name="SECONDS", datatype="FP32", shape=[1])
    request.raw_input_contents.append(np.float32(seconds).tobytes())
    return request


def _finished(server, seconds: float) -> bool:
    return (Path(server.version_dir) / f"finished-{seconds}").exists()


def test_model_runs_to_completion_when_awaited(slow_server, stub):
    reply = stub.ModelInfer(_request(0.0625), timeout=10)
    assert np.frombuffer(reply.raw_output_contents[0], "<f4").tolist() == [0.0625]
    assert _finished(slow_server, 0.0625)


def test_missed_deadline_cancels_the_work(slow_server, stub):
    with pytest.raises(grpc.RpcError) as caught:
        stub.ModelInfer(_request(1.0), timeout=0.2)
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    time.sleep(1.5)
    assert not _finished(slow_server, 1.0)


def test_cancelled_call_cancels_the_work(slow_server, stub):
    future = stub.ModelInfer.future(_request(1.25), timeout=10)
    time.sleep(0.2)
    assert future.cancel()
    time.sleep(1.5)
    assert not _finished(slow_server, 1.25)


def test_abandoned_stream_cancels_its_requests(slow_server, stub):
    call = stub.ModelStreamInfer(iter([_request(1.5), _request(0.015625)]), timeout=10)
    first = next(call)  # the quick one answers first: responses come in completion order
    assert not first.error_message
    assert np.frombuffer(first.infer_response.raw_output_contents[0], "<f4").tolist() == [0.015625]
    call.cancel()
    time.sleep(2.0)
    assert not _finished(slow_server, 1.5)
    assert stub.ModelInfer(_request(0.03125), timeout=10).model_name == "slow"
