"""Helpers for the shared-memory tests: servers with client shared memory on, raw HTTP, maps."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from ..conftest import MODEL_REPOSITORY
from ..http_wire import binary_infer, peak_rss, reset_peak, status_bytes  # noqa: F401 - the shm tests import them from here

#: Sleeps before answering its input: a request that is still in flight when the test acts.
SLOW_MODEL = """
import asyncio


class Model:
    async def infer(self, inputs):
        await asyncio.sleep(2.0)
        return {"OUTPUT0": inputs["INPUT0"] * 1}
"""


def repository_with_slow_model(folder: Path) -> Path:
    """identity_fp32, simple, and slow_identity_fp32 (identity_fp32 answering after 2 s)."""
    shutil.copytree(MODEL_REPOSITORY / "identity_fp32", folder / "identity_fp32")
    shutil.copytree(MODEL_REPOSITORY / "simple", folder / "simple")
    slow = folder / "slow_identity_fp32"
    (slow / "1").mkdir(parents=True)
    config = (MODEL_REPOSITORY / "identity_fp32" / "config.pbtxt").read_text()
    (slow / "config.pbtxt").write_text(config.replace('"identity_fp32"', '"slow_identity_fp32"'))
    (slow / "1" / "model.py").write_text(SLOW_MODEL)
    return folder


def post(port: int, path: str, body: Any = None, method: str = "POST") -> tuple[int, Any]:
    """(status, parsed JSON or raw bytes) of one plain HTTP request."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        payload = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        connection.request(method, path, body=payload)
        reply = connection.getresponse()
        data = reply.read()
    finally:
        connection.close()
    try:
        return reply.status, json.loads(data) if data else None
    except ValueError:
        return reply.status, data


def get(port: int, path: str) -> tuple[int, Any]:
    return post(port, path, method="GET")


def mapped_keys(pid: int, key: str) -> list[str]:
    """Lines of the server's memory maps and open descriptors that point at shm object ``key``."""
    target = f"/dev/shm/{key.lstrip('/')}"
    with open(f"/proc/{pid}/maps") as maps:
        lines = [line.strip() for line in maps if target in line]
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(target):
                lines.append(f"fd {fd}")
        except OSError:
            pass
    return lines


#: tritonclient.grpc cannot share a process with our protos (docs/protocols/oip-grpc.md), so
#: Triton's clients run in a child: ``module`` is tritonclient.http or .grpc, ``triton`` a client.
CHILD_PRELUDE = """
import json, sys
import numpy as np
import pytest
import tritonclient.{protocol} as module
from tritonclient.utils import InferenceServerException
args = json.loads(sys.argv[1])
triton = module.InferenceServerClient(args["url"])
"""


def run_client(protocol: str, url: str, code: str, **values: Any) -> Any:
    """Run ``code`` with Triton's ``protocol`` client in a child; answer what it printed last (JSON)."""
    script = CHILD_PRELUDE.format(protocol=protocol) + textwrap.dedent(code)
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps({"url": url, **values})],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else None
