"""Raw HTTP and a tritonclient.grpc runner for the repository tests.

tritonclient.grpc cannot share a process with modelplatform (both register
the protobuf package ``inference``), so gRPC client code runs in a child
Python process that prints JSON.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import textwrap
import time
from typing import Any


def post(
    url: str, path: str, body: bytes | None = b"", headers: dict[str, str] | None = None, method: str = "POST"
) -> tuple[int, Any]:
    host, port = url.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        data = response.read()
    finally:
        connection.close()
    return response.status, json.loads(data) if data else None


def timed_get(url: str, path: str) -> tuple[int, float]:
    started = time.perf_counter()
    status, _ = post(url, path, None, method="GET")
    return status, time.perf_counter() - started


def index(url: str, **body: Any) -> dict[str, dict[str, str]]:
    status, entries = post(url, "/v2/repository/index", json.dumps(body).encode() if body else b"")
    assert status == 200, entries
    return {e["name"]: e for e in entries}


def infer(url: str, model: str, values: list[float]) -> tuple[int, Any]:
    body = {"inputs": [{"name": "INPUT0", "shape": [len(values)], "datatype": "FP32", "data": values}]}
    return post(url, f"/v2/models/{model}/infer", json.dumps(body).encode())


def grpc_client(grpc_url: str, code: str) -> Any:
    """Run ``code`` with ``client`` (tritonclient.grpc) bound; it sets ``result`` (JSON-able)."""
    script = (
        "import json, tritonclient.grpc as grpcclient\n"
        "from tritonclient.utils import InferenceServerException\n"
        f"client = grpcclient.InferenceServerClient('{grpc_url}')\n"
        "result = None\n" + textwrap.dedent(code) + "\nclient.close()\nprint(json.dumps(result))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def load(url: str, model: str, **parameters: str) -> tuple[int, Any]:
    """Thread-safe load (tritonclient.http's gevent client must stay on one thread)."""
    body = json.dumps({"parameters": parameters}).encode()
    return post(url, f"/v2/repository/models/{model}/load", body)


def unload(url: str, model: str) -> tuple[int, Any]:
    return post(url, f"/v2/repository/models/{model}/unload", b'{"parameters":{"unload_dependents":false}}')
