"""ModelStreamInfer with and without Triton's ``triton_grpc_error: true`` header.

Without it a failed request is an ``error_message`` on the stream, which goes
on; with it the first failure ends the stream as its gRPC status (the unary
call's code and message), after the answers of the requests before it, and
cancels what is still in flight. Raw grpc stubs here; tritonclient's own
``start_stream(headers=...)`` in a subprocess (stream_error_probe.py: its
protos clash with ours in one process).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest

from modelplatform.testing import ServerProcess
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc

from .slow_model import add_slow_model

ROOT = Path(__file__).resolve().parents[3]
PROBE = Path(__file__).with_name("stream_error_probe.py")
ERROR_MODE = (("triton_grpc_error", "true"),)
WAIT = 30  # seconds for one answer: generous on a loaded machine


@pytest.fixture(scope="module")
def stream_server(tmp_path_factory) -> Iterator[ServerProcess]:
    repository = tmp_path_factory.mktemp("repository")
    shutil.copytree(ROOT / "model_repository" / "simple", repository / "simple")
    shutil.copytree(ROOT / "tests" / "e2e" / "streaming_models" / "fail_midway", repository / "fail_midway")
    add_slow_model(repository, instances=4)
    with ServerProcess("--model-repository", str(repository)) as process:
        process.slow_dir = repository / "slow" / "1"
        yield process


@pytest.fixture(scope="module")
def stub(stream_server) -> Iterator[pb_grpc.GRPCInferenceServiceStub]:
    with grpc.insecure_channel(stream_server.grpc_url) as channel:
        yield pb_grpc.GRPCInferenceServiceStub(channel)


def simple(request_id: str, rows: int = 1) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="simple", id=request_id)
    for name in ("INPUT0", "INPUT1"):
        request.inputs.add(name=name, datatype="INT32", shape=[rows, 16])
        request.raw_input_contents.append(np.ones((rows, 16), np.int32).tobytes())
    return request


def wrong_shape(request_id: str) -> pb.ModelInferRequest:
    request = simple(request_id)
    request.inputs[0].shape[:] = [1, 15]
    request.raw_input_contents[0] = np.ones((1, 15), np.int32).tobytes()
    return request


def unknown_model(request_id: str) -> pb.ModelInferRequest:
    return pb.ModelInferRequest(model_name="no_such_model", id=request_id)


def slow(seconds: float, request_id: str = "slow") -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="slow", id=request_id)
    request.inputs.add(name="SECONDS", datatype="FP32", shape=[1])
    request.raw_input_contents.append(np.float32(seconds).tobytes())
    return request


def fail_midway() -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="fail_midway", id="midway")
    request.inputs.add(name="COUNT", datatype="INT32", shape=[1])
    request.raw_input_contents.append(np.int32(3).tobytes())
    return request


class Lockstep:
    """A request iterator that sends each request after the answers it waits for.

    ``steps`` pairs a request with how many answers must have arrived before it
    goes; the stream stays open until :meth:`close` (or the call ends).
    """

    def __init__(self, steps: list[tuple[int, pb.ModelInferRequest]]) -> None:
        self.steps = steps
        self.answered = 0
        self.changed = threading.Condition()
        self.closed = False

    def saw_answer(self) -> None:
        with self.changed:
            self.answered += 1
            self.changed.notify_all()

    def close(self) -> None:
        with self.changed:
            self.closed = True
            self.changed.notify_all()

    def __iter__(self) -> Iterator[pb.ModelInferRequest]:
        for after, request in self.steps:
            with self.changed:
                if not self.changed.wait_for(lambda after=after: self.answered >= after or self.closed, WAIT):
                    return
                if self.closed:
                    return
            yield request
        with self.changed:  # keep the stream open: the server decides how it ends
            self.changed.wait_for(lambda: self.closed, WAIT)


def run_stream(stub, steps, metadata=(), until: int | None = None) -> tuple[list, grpc.RpcError | None]:
    """Every message the stream answered, and the error status it ended with (None: OK).

    With ``until``, the client half-closes once that many answers have come.
    """
    sender = Lockstep(steps)
    seen: list = []
    call = stub.ModelStreamInfer(iter(sender), metadata=metadata, timeout=WAIT)
    try:
        for reply in call:
            seen.append(reply)
            sender.saw_answer()
            if until is not None and len(seen) >= until:
                sender.close()
    except grpc.RpcError as error:
        return seen, error
    finally:
        sender.close()
    return seen, None


def answered_ids(seen: list) -> list[str]:
    return [reply.infer_response.id for reply in seen if not reply.error_message]


def test_without_the_header_an_error_is_a_message_and_the_stream_goes_on(stub):
    steps = [(0, simple("a")), (1, unknown_model("b")), (2, simple("c"))]
    seen, error = run_stream(stub, steps, until=3)
    assert error is None
    assert [reply.error_message for reply in seen] == [
        "",
        "Request for unknown model: 'no_such_model' is not found",
        "",
    ]
    assert answered_ids(seen) == ["a", "c"]


def test_with_the_header_the_first_error_ends_the_stream_with_its_status(stub):
    steps = [(0, simple("a")), (1, simple("b")), (2, unknown_model("c")), (3, simple("d"))]
    seen, error = run_stream(stub, steps, metadata=ERROR_MODE)
    assert answered_ids(seen) == ["a", "b"]  # the requests before the error were answered
    assert all(not reply.error_message for reply in seen)
    assert error is not None
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert error.details() == "Request for unknown model: 'no_such_model' is not found"


def test_the_status_is_the_one_a_unary_call_gets(stub):
    with pytest.raises(grpc.RpcError) as unary:
        stub.ModelInfer(wrong_shape("u"), timeout=WAIT)
    seen, error = run_stream(stub, [(0, wrong_shape("s"))], metadata=ERROR_MODE)
    assert seen == []
    assert error is not None
    assert (error.code(), error.details()) == (unary.value.code(), unary.value.details())
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_a_model_failing_midway_ends_the_stream_after_its_responses(stub):
    seen, error = run_stream(stub, [(0, fail_midway())], metadata=ERROR_MODE)
    assert [np.frombuffer(r.infer_response.raw_output_contents[0], "<i4").tolist() for r in seen] == [
        [1],
        [2],
    ]
    assert error is not None
    assert error.code() == grpc.StatusCode.INTERNAL
    assert error.details() == "model 'fail_midway' failed: RuntimeError: broke after two"


def test_without_the_header_a_model_failing_midway_is_a_message(stub):
    seen, error = run_stream(stub, [(0, fail_midway()), (3, simple("after"))], until=4)
    assert error is None
    assert [reply.error_message for reply in seen[:3]] == [
        "",
        "",
        "model 'fail_midway' failed: RuntimeError: broke after two",
    ]
    assert answered_ids(seen[3:]) == ["after"]


@pytest.mark.parametrize("value", ["maybe", "false", "True", ""])
def test_any_other_header_value_keeps_the_default_as_triton_does(stub, value):
    steps = [(0, unknown_model("x")), (1, simple("y"))]
    seen, error = run_stream(stub, steps, metadata=(("triton_grpc_error", value),), until=2)
    assert error is None
    assert seen[0].error_message == "Request for unknown model: 'no_such_model' is not found"
    assert answered_ids(seen[1:]) == ["y"]


def test_requests_in_flight_when_the_stream_ends_are_cancelled(stream_server, stub):
    seconds = 1.5
    started = time.monotonic()
    steps = [(0, slow(seconds)), (0, simple("a", rows=2)), (1, unknown_model("x"))]
    seen, error = run_stream(stub, steps, metadata=ERROR_MODE)
    assert answered_ids(seen) == ["a"]
    assert error is not None and error.code() == grpc.StatusCode.NOT_FOUND
    assert time.monotonic() - started < seconds  # the status did not wait for the slow request
    time.sleep(seconds + 1.0)
    assert not (Path(stream_server.slow_dir) / f"finished-{seconds}").exists()


def test_many_requests_on_one_stream_then_an_error_end_cleanly(stub):
    """Answers racing the status: every message before it is whole, nothing after it."""
    steps = [(0, simple(str(i))) for i in range(40)] + [(0, unknown_model("x"))]
    for _ in range(5):
        seen, error = run_stream(stub, steps, metadata=ERROR_MODE)
        assert error is not None and error.code() == grpc.StatusCode.NOT_FOUND
        assert all(not reply.error_message for reply in seen)
        assert set(answered_ids(seen)) <= {str(i) for i in range(40)}
    seen, error = run_stream(stub, [(0, simple("again"))], until=1)  # the server still serves
    assert error is None and answered_ids(seen) == ["again"]


@pytest.fixture(scope="module")
def probe(stream_server) -> dict:
    done = subprocess.run(
        [sys.executable, str(PROBE), stream_server.grpc_url],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_tritonclient_with_the_header_sees_the_status_after_the_answers(probe):
    assert probe["error_mode"] == [
        {"id": "a"},
        {
            "status": "StatusCode.NOT_FOUND",
            "message": "Request for unknown model: 'no_such_model' is not found",
        },
    ]


def test_tritonclient_without_the_header_sees_the_error_and_goes_on(probe):
    assert probe["default_mode"] == [
        {"id": "a"},
        {"status": "None", "message": "Request for unknown model: 'no_such_model' is not found"},
        {"id": "c"},
    ]
