"""HTTP/1.1 helpers of the REST families: one keep-alive connection, and raw requests.

Valid traffic reuses one connection per family (the fast lane serves plain
keep-alive requests); hostile requests that may end a connection (an
oversized body, a malformed head) use a fresh socket of their own.
"""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import zlib

TIMEOUT_SECS = 60.0


class HttpSession:
    """One keep-alive connection; reopened after the server closes it (http.client does)."""

    def __init__(self, address: str) -> None:
        host, port = address.rsplit(":", 1)
        self.host, self.port = host, int(port)
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT_SECS)

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes, dict[str, str]]:
        try:
            self.connection.request(method, path, body=body, headers=headers or {})
            reply = self.connection.getresponse()
            data = reply.read()
        except BaseException:
            self.connection.close()  # never reuse a connection left mid-exchange
            raise
        return reply.status, data, {k.lower(): v for k, v in reply.getheaders()}

    def post_json(
        self, path: str, document: object, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        status, data, _ = self.request(
            "POST", path, json_bytes(document), {"Content-Type": "application/json", **(headers or {})}
        )
        return status, data

    def chunks(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, list[bytes]]:
        """POST and read a chunked answer chunk by chunk as it arrives."""
        try:
            self.connection.request("POST", path, body=body, headers=headers)
            reply = self.connection.getresponse()
            if reply.status != 200:
                return reply.status, [reply.read()]
            pieces = []
            while piece := reply.read1(1 << 16):
                pieces.append(piece)
            return reply.status, pieces
        except BaseException:
            self.connection.close()
            raise


def json_bytes(document: object) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()


def compress(body: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.compress(body, compresslevel=1)
    return zlib.compress(body, 1)  # HTTP's "deflate" is the zlib format


def decompress(body: bytes, encoding: str) -> bytes:
    return gzip.decompress(body) if encoding == "gzip" else zlib.decompress(body)


def raw_exchange(address: str, head: bytes, body: bytes = b"") -> tuple[int, bytes]:
    """Send bytes on a fresh socket, read until the server closes it; (status, whole answer)."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=TIMEOUT_SECS) as sock:
        sock.sendall(head + body)
        answer = b""
        while data := sock.recv(1 << 16):
            answer += data
    status_line = answer.split(b"\r\n", 1)[0].split()
    status = int(status_line[1]) if len(status_line) > 1 and status_line[1].isdigit() else 0
    return status, answer


def oversized_head(path: str, declared: int, content_type: str = "application/json") -> bytes:
    """A request head declaring a body over the server's limit (the body never follows)."""
    return (
        f"POST {path} HTTP/1.1\r\nHost: soak\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {declared}\r\nConnection: close\r\n\r\n"
    ).encode()
