"""Constant load on a server for tests/e2e/test_drain.py, run as a child process.

``python drain_load.py HTTP_PORT GRPC_PORT``: until stdin closes, several
clients send requests back to back over OIP HTTP (keep-alive http.client),
OIP gRPC (tritonclient.grpc) and TF Serving REST ``:predict`` (keep-alive),
and probes poll OIP HTTP readiness and liveness and gRPC ServerReady. One
JSON line per finished request or probe: client, sent and done
(time.monotonic, which this machine shares between processes), ok, detail.
A child process because tritonclient.grpc and modelplatform's generated
protos cannot share one (both register the protobuf package ``inference``).
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
from collections.abc import Callable

import numpy as np
import tritonclient.grpc as grpcclient

CLIENTS_PER_TRANSPORT = 3
PROBE_EVERY_S = 0.02
AFTER_FAILURE_S = 0.05  # a refused client waits a little before it tries again

OIP_BODY = json.dumps({"inputs": [
    {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
    {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16},
]}).encode()  # fmt: skip
TFS_BODY = json.dumps({"instances": [{"INPUT0": list(range(16)), "INPUT1": [1] * 16}]}).encode()

stopping = threading.Event()
printing = threading.Lock()


def emit(client: str, sent: float, ok: bool, detail: str = "") -> None:
    line = json.dumps({"client": client, "sent": sent, "done": time.monotonic(), "ok": ok, "detail": detail})
    with printing:
        print(line, flush=True)


class KeepAlive:
    """One keep-alive HTTP connection; a closed one is reopened for the next request."""

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def send(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        try:
            self.connection.request(method, path, body=body)
            reply = self.connection.getresponse()
            return reply.status, reply.read()
        except Exception:
            self.connection.close()  # the next request opens a new connection
            raise


def loop(client: str, once: Callable[[], tuple[bool, str]], pause: float = 0.0) -> None:
    while not stopping.is_set():
        sent = time.monotonic()
        try:
            ok, detail = once()
        except Exception as error:  # noqa: BLE001 - recorded: the test counts failures
            ok, detail = False, f"{type(error).__name__}: {error}"[:200]
        emit(client, sent, ok, detail)
        if not ok:
            time.sleep(AFTER_FAILURE_S)
        elif pause:
            time.sleep(pause)


def http_client(port: int, client: str, path: str, body: bytes) -> None:
    connection = KeepAlive(port)

    def once() -> tuple[bool, str]:
        status, data = connection.send("POST", path, body)
        return status == 200, "" if status == 200 else f"{status} {data[:200]!r}"

    loop(client, once)


def http_probe(port: int, client: str, path: str) -> None:
    connection = KeepAlive(port)

    def once() -> tuple[bool, str]:
        status, _ = connection.send("GET", path)
        return True, str(status)  # a probe "fails" only when it gets no answer

    loop(client, once, PROBE_EVERY_S)


def grpc_client(port: int, client: str) -> None:
    triton = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
    inputs = [
        grpcclient.InferInput("INPUT0", [1, 16], "INT32"),
        grpcclient.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    inputs[0].set_data_from_numpy(np.arange(16, dtype=np.int32).reshape(1, 16))
    inputs[1].set_data_from_numpy(np.ones((1, 16), dtype=np.int32))

    def once() -> tuple[bool, str]:
        result = triton.infer("simple", inputs, client_timeout=30)
        return result.as_numpy("OUTPUT0") is not None, ""

    loop(client, once)


def grpc_probe(port: int) -> None:
    triton = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
    loop("grpc-ready", lambda: (True, str(triton.is_server_ready(client_timeout=5))), PROBE_EVERY_S)


def main() -> None:
    http_port, grpc_port = int(sys.argv[1]), int(sys.argv[2])
    work: list[tuple[Callable[..., None], tuple[object, ...]]] = [
        (http_probe, (http_port, "http-ready", "/v2/health/ready")),
        (http_probe, (http_port, "http-live", "/v2/health/live")),
        (grpc_probe, (grpc_port,)),
    ]
    for n in range(CLIENTS_PER_TRANSPORT):
        work.append((http_client, (http_port, f"oip-http-{n}", "/v2/models/simple/infer", OIP_BODY)))
        work.append((http_client, (http_port, f"tfs-rest-{n}", "/v1/models/simple:predict", TFS_BODY)))
        work.append((grpc_client, (grpc_port, f"oip-grpc-{n}")))
    threads = [threading.Thread(target=target, args=args, daemon=True) for target, args in work]
    for thread in threads:
        thread.start()
    sys.stdin.read()  # until the test closes it
    stopping.set()
    for thread in threads:
        thread.join(timeout=35)


if __name__ == "__main__":
    main()
