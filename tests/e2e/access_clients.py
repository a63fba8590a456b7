"""Clients the access tests share: raw HTTP with headers, tritonclient.grpc in a child process."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from typing import Any

#: One small request of model ``simple`` (two INT32[1,16] inputs): answered by the fast lane.
SIMPLE_BODY = json.dumps({"inputs": [
    {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": list(range(16))},
    {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": [1] * 16},
]}).encode()  # fmt: skip


def request(
    port: int, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One request: (status, lower-case headers, body)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        sent = {"Content-Type": "application/json", **(headers or {})} if body else dict(headers or {})
        connection.request(method, path, body=body or None, headers=sent)
        reply = connection.getresponse()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read()
    finally:
        connection.close()


def triton_grpc(grpc_url: str, code: str) -> Any:
    """Run ``code`` with ``client`` (tritonclient.grpc) and ``simple_inputs()`` bound in a child
    process (tritonclient.grpc cannot share one with our protos); it sets ``result``."""
    script = (
        textwrap.dedent(f"""
        import json
        import numpy as np
        import tritonclient.grpc as grpcclient
        from tritonclient.utils import InferenceServerException
        client = grpcclient.InferenceServerClient({grpc_url!r})
        def simple_inputs():
            tensors = [grpcclient.InferInput(name, [1, 16], "INT32") for name in ("INPUT0", "INPUT1")]
            for tensor in tensors:
                tensor.set_data_from_numpy(np.arange(16, dtype=np.int32).reshape(1, 16))
            return tensors
        def outcome(call):
            try:
                call()
                return "OK"
            except InferenceServerException as error:
                return [error.status(), error.message()]
        result = None
    """)
        + textwrap.dedent(code)
        + "\nprint(json.dumps(result))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def grpc_code(call: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """The status code name a unary gRPC call ends with ("OK" when it answers)."""
    import grpc

    try:
        call(*args, **kwargs)
    except grpc.RpcError as error:
        return error.code().name
    return "OK"


def wait_until(predicate: Callable[[], bool], seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False
