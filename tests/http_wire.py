"""Raw-socket HTTP/1.1 exchanges for tests that must control framing exactly."""

from __future__ import annotations

import http.client
import socket


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
