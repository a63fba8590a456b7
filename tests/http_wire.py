"""Raw-socket HTTP/1.1 exchanges for tests that must control framing exactly."""

from __future__ import annotations

import http.client
import json
import socket

import numpy as np
import pytest


def exchange(
    port: int, path: str, body: bytes, headers: tuple[str, ...], close: bool, compared: tuple[str, ...]
) -> tuple:
    """POST once; (status, the ``compared`` headers, the Connection header, the body de-chunked)."""
    lines = [f"POST {path} HTTP/1.1", "Host: t", f"Content-Length: {len(body)}", *headers]
    if close:
        lines.append("Connection: close")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        answer = {k.lower(): v.strip() for k, v in (h.split(":", 1) for h in header_lines)}
        content = _read_body(sock, rest, answer)
    return int(status_line.split()[1]), {k: answer.get(k) for k in compared}, answer["connection"], content


def _read_body(sock: socket.socket, rest: bytes, headers: dict[str, str]) -> bytes:
    if headers.get("transfer-encoding") == "chunked":
        return _dechunk(sock, rest)
    while len(rest) < int(headers["content-length"]):
        rest += sock.recv(65536)
    return rest


def _dechunk(sock: socket.socket, data: bytes) -> bytes:
    body = b""
    while True:
        while b"\r\n" not in data:
            data += sock.recv(65536)
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line, 16)
        while len(data) < size + 2:
            data += sock.recv(65536)
        if size == 0:
            return body
        body, data = body + data[:size], data[size + 2 :]


def post(port: int, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict, bytes]:
    """One POST through http.client: (status, lower-case headers, body)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", path, body=body, headers=headers)
        reply = connection.getresponse()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read()
    finally:
        connection.close()


def get_status(port: int, path: str) -> int:
    """One GET through http.client: the status only."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path)
        return connection.getresponse().status
    finally:
        connection.close()


def peak_rss(pid: int) -> int:
    return status_bytes(pid, "VmHWM")


def status_bytes(pid: int, field: str) -> int:
    """A size line of /proc/<pid>/status (VmHWM, RssShmem, ...) in bytes."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc status")


def reset_peak(pid: int) -> int:
    """Set VmHWM to the current resident size; answer that size (skips where the kernel can't)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as clear:
            clear.write("5")
    except OSError as error:
        pytest.skip(f"cannot reset the peak resident size here: {error}")
    return peak_rss(pid)


def binary_infer(port: int, data: np.ndarray) -> np.ndarray:
    """identity_fp32 over HTTP with binary input and output (no shared memory)."""
    header = json.dumps({
        "inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [data.size],
                    "parameters": {"binary_data_size": data.nbytes}}],
        "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}],
    }).encode()  # fmt: skip
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        connection.request(
            "POST", "/v2/models/identity_fp32/infer", body=header + data.tobytes(),
            headers={"Inference-Header-Content-Length": str(len(header))},
        )  # fmt: skip
        reply = connection.getresponse()
        body = reply.read()
        assert reply.status == 200, body[:200]
        length = int(reply.getheader("Inference-Header-Content-Length"))
    finally:
        connection.close()
    assert json.loads(body[:length])["outputs"][0]["parameters"]["binary_data_size"] == data.nbytes
    return np.frombuffer(body[length:], dtype=np.float32)
