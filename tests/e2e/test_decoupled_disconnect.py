"""A client that leaves a stream stops the model: gRPC ModelStreamInfer and generate_stream.

The test models (streaming_models/) count forever, writing each step to a
progress file and "stopped" when their generator is closed or their
response sender refuses the next send; a model still running for a client
that is gone would keep writing. count_forever_pipeline is an ensemble
streaming through count_forever_decoupled: leaving it stops that model too.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import grpc
import httpx
import httpx_sse
import orjson
import pytest

from modelplatform.testing import ServerProcess
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc

MODELS = Path(__file__).with_name("streaming_models")
#: count_forever_pipeline: an ensemble streaming through count_forever_decoupled.
COUNTERS = ("count_forever", "count_forever_decoupled", "count_forever_pipeline")


@pytest.fixture(scope="module")
def streaming_server():
    with ServerProcess("--model-repository", str(MODELS)) as process:
        yield process


def _progress(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def _wait_for_steps(path: Path, steps: int) -> None:
    deadline = time.monotonic() + 30
    while len(_progress(path)) < steps:
        assert time.monotonic() < deadline, "the model never started"
        time.sleep(0.02)


def _assert_stopped(path: Path) -> None:
    """The model wrote "stopped" (its finally ran) and wrote nothing after it."""
    deadline = time.monotonic() + 30
    while "stopped" not in _progress(path):
        assert time.monotonic() < deadline, f"the model kept running: {len(_progress(path))} steps"
        time.sleep(0.05)
    seen = _progress(path)
    time.sleep(0.5)
    assert _progress(path) == seen and seen[-1] == "stopped"


def _stream_request(model: str, progress: Path) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name=model, id="forever")
    request.inputs.add(name="PROGRESS_FILE", datatype="BYTES", shape=[1])
    encoded = str(progress).encode()
    request.raw_input_contents.append(len(encoded).to_bytes(4, "little") + encoded)
    return request


@pytest.mark.parametrize("model", COUNTERS)
def test_a_cancelled_grpc_stream_stops_the_model(streaming_server, tmp_path, model):
    progress = tmp_path / "progress.txt"
    with grpc.insecure_channel(streaming_server.grpc_url) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        call = stub.ModelStreamInfer(iter([_stream_request(model, progress)]), timeout=60)
        first = next(call)
        assert not first.error_message and first.infer_response.id == "forever"
        assert first.infer_response.parameters["triton_final_response"].bool_param is False
        _wait_for_steps(progress, 3)
        call.cancel()
    _assert_stopped(progress)


@pytest.mark.parametrize("model", COUNTERS)
def test_a_client_leaving_generate_stream_stops_the_model(streaming_server, tmp_path, model):
    progress = tmp_path / "progress.txt"
    body = orjson.dumps({"PROGRESS_FILE": str(progress)})
    request = (
        f"POST /v2/models/{model}/generate_stream HTTP/1.1\r\nHost: t\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    with socket.create_connection(("127.0.0.1", streaming_server.http_port), timeout=30) as sock:
        sock.sendall(request)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        _wait_for_steps(progress, 3)
    _assert_stopped(progress)


def test_the_server_serves_on_after_the_clients_left(streaming_server, tmp_path):
    """Every stream above ended: the counters answer a new stream read to its third event."""
    progress = tmp_path / "progress.txt"
    with httpx.Client(base_url=f"http://{streaming_server.http_url}", timeout=30) as client:
        url = "/v2/models/count_forever_decoupled/generate_stream"
        body = {"PROGRESS_FILE": str(progress)}
        with httpx_sse.connect_sse(client, "POST", url, json=body) as source:
            events = source.iter_sse()
            assert [orjson.loads(next(events).data)["INDEX"] for _ in range(3)] == [1, 2, 3]
    _assert_stopped(progress)


def test_an_error_after_the_first_response_is_an_sse_error_event(streaming_server):
    with httpx.Client(base_url=f"http://{streaming_server.http_url}", timeout=30) as client:
        url = "/v2/models/fail_midway/generate_stream"
        with httpx_sse.connect_sse(client, "POST", url, json={"COUNT": 2}) as source:
            assert source.response.status_code == 200
            events = [orjson.loads(e.data) for e in source.iter_sse()]
    assert [e.get("INDEX") for e in events[:2]] == [1, 2]
    assert events[2] == {"error": "model 'fail_midway' failed: RuntimeError: broke after two"}
    assert len(events) == 3


def test_a_bad_empty_final_flag_is_refused_in_band(streaming_server, tmp_path):
    request = _stream_request("count_forever", tmp_path / "never.txt")
    request.parameters["triton_enable_empty_final_response"].string_param = "yes"
    with grpc.insecure_channel(streaming_server.grpc_url) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        (reply,) = list(stub.ModelStreamInfer(iter([request]), timeout=30))
    expected = "invalid value type for 'triton_enable_empty_final_response' parameter"
    assert expected in reply.error_message
    assert not (tmp_path / "never.txt").exists()


def test_an_ensemble_streams_each_answer_of_its_decoupled_step_through_the_next(streaming_server, tmp_path):
    """count_forever_pipeline: each count of its decoupled step, times ten by its second step."""
    with grpc.insecure_channel(streaming_server.grpc_url) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        call = stub.ModelStreamInfer(
            iter([_stream_request("count_forever_pipeline", tmp_path / "p.txt")]), timeout=60
        )
        replies = [next(call) for _ in range(3)]
        call.cancel()
        unary = _stream_request("count_forever_pipeline", tmp_path / "never.txt")
        with pytest.raises(grpc.RpcError) as refused:
            stub.ModelInfer(unary, timeout=30)
    outputs = [reply.infer_response.outputs[0].name for reply in replies]
    values = [int.from_bytes(reply.infer_response.raw_output_contents[0], "little") for reply in replies]
    assert (outputs, values) == (["OUT"] * 3, [10, 20, 30])
    assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "decoupled transaction policy" in refused.value.details()
    with httpx.Client(base_url=f"http://{streaming_server.http_url}", timeout=30) as client:
        config = client.get("/v2/models/count_forever_pipeline/config").json()
    assert config["model_transaction_policy"] == {"decoupled": True}
    _assert_stopped(tmp_path / "p.txt")
