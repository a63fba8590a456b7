"""The metrics port (8002): a small HTTP/1.1 server answering ``GET /metrics`` only.

Not the HTTP front end: the metrics port must answer while the main port is
saturated, and it needs no dialects, bodies or fast lane. Every size a
client controls is bounded: the request head (:data:`MAX_HEAD_BYTES`, else
431), the time to send it (:data:`HEAD_TIMEOUT_S`), and request bodies
(refused: 400). Keep-alive is kept, as Prometheus reuses its connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Awaitable, Callable

import structlog

from modelplatform import HeaderCheck

from .exposition import CONTENT_TYPE

log = structlog.get_logger("modelplatform.metrics")

MAX_HEAD_BYTES = 16 * 1024
HEAD_TIMEOUT_S = 30.0

Scrape = Callable[[], Awaitable[bytes]]


class MetricsPort:
    def __init__(self, scrape: Scrape, admit: HeaderCheck | None = None) -> None:
        self._scrape = scrape
        #: Restricted APIs and API keys for category ``metrics`` (None: nothing to check).
        self._admit = admit
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self, address: str, port: int, shared: bool, tls: ssl.SSLContext | None = None) -> int:
        """Listen (over TLS when ``tls`` is given); returns the port bound (``port`` 0 picks a free one)."""
        self._server = await asyncio.start_server(
            self._serve, address, port, limit=MAX_HEAD_BYTES, reuse_port=shared or None, ssl=tls,
            ssl_handshake_timeout=HEAD_TIMEOUT_S if tls is not None else None,
        )  # fmt: skip
        bound = self._server.sockets[0].getsockname()[1]
        log.info("metrics_port_opened", address=address, port=bound, tls=tls is not None)
        return int(bound)

    async def close(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while await self._answer_one(reader, writer):
                pass
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
            pass  # the client left or stalled: nothing to answer
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; whether the connection stays open for another."""
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
        except asyncio.LimitOverrunError:
            await _reply(writer, 431, b"request head too large\n", close=True)
            return False
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        headers = _headers(header_lines)
        method, path, version = (request_line.split(" ") + ["", "", ""])[:3]
        if headers.get("content-length", "0") != "0" or "transfer-encoding" in headers:
            await _reply(writer, 400, b"request bodies are not accepted\n", close=True)
            return False
        keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        if path.split("?", 1)[0] != "/metrics":
            await _reply(writer, 404, b"not found: the metrics are at /metrics\n", close=not keep)
        elif method not in ("GET", "HEAD"):
            await _reply(writer, 405, b"method not allowed\n", close=not keep, allow=True)
        elif (refusal := self._admit(headers) if self._admit is not None else None) is not None:
            await _reply(writer, refusal[0], refusal[1].encode() + b"\n", close=not keep)
        else:
            body = await self._scrape()
            await _reply(writer, 200, body, close=not keep, head_only=method == "HEAD")
        return keep


def _headers(lines: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if sep:
            found.setdefault(name.strip().lower(), value.strip())
    return found


async def _reply(
    writer: asyncio.StreamWriter,
    status: int,
    body: bytes,
    close: bool,
    head_only: bool = False,
    allow: bool = False,
) -> None:
    reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
              405: "Method Not Allowed",
              431: "Request Header Fields Too Large"}[status]  # fmt: skip
    content_type = CONTENT_TYPE if status == 200 else "text/plain; charset=utf-8"
    head = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {content_type}",
            f"Content-Length: {len(body)}"]  # fmt: skip
    if allow:
        head.append("Allow: GET, HEAD")
    if close:
        head.append("Connection: close")
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
    if not head_only:
        writer.write(body)
    await writer.drain()
