"""A client that goes away stops the model's generator (HTTP and gRPC)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import grpc
import orjson

from modelplatform.testing import ServerProcess
from modelplatform_grps.protos import grps_pb2_grpc
from modelplatform_grps.protos.grps_pb2 import GrpsMessage

STEPS = 200  # 0.05 s each: 10 s if nobody stops it


def _progress(path: Path) -> int:
    return len(path.read_text().split()) if path.exists() else 0


def _wait_for(path: Path, steps: int) -> None:
    deadline = time.monotonic() + 10
    while _progress(path) < steps:
        assert time.monotonic() < deadline, "the model never started"
        time.sleep(0.02)


def _assert_stopped(path: Path) -> None:
    time.sleep(0.4)  # let the step in flight finish
    seen = _progress(path)
    time.sleep(0.6)
    assert _progress(path) == seen, "the generator kept running after the client left"
    assert seen < STEPS


def test_http_disconnect_stops_the_generator(grps_server: ServerProcess, tmp_path: Path) -> None:
    progress = tmp_path / "http.txt"
    body = orjson.dumps(
        {
            "model": "stream_progress",
            "gmap": {"s_i32": {"COUNT": STEPS}, "s_s": {"PROGRESS_FILE": str(progress)}},
        }
    )
    request = (
        f"POST /grps/v1/infer/predict?streaming=true HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    with socket.create_connection(("127.0.0.1", grps_server.http_port), timeout=10) as sock:
        sock.sendall(request)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        _wait_for(progress, 3)
    _assert_stopped(progress)


def test_grpc_cancel_stops_the_generator(grps_server: ServerProcess, tmp_path: Path) -> None:
    progress = tmp_path / "grpc.txt"
    request = GrpsMessage(model="stream_progress")
    request.gmap.s_i32["COUNT"] = STEPS
    request.gmap.s_s["PROGRESS_FILE"] = str(progress)
    with grpc.insecure_channel(grps_server.grpc_url) as channel:
        call = grps_pb2_grpc.GrpsServiceStub(channel).PredictStreaming(request)
        assert next(call).gtensors.tensors[0].flat_int32[0] == 1
        _wait_for(progress, 3)
        call.cancel()
    _assert_stopped(progress)
