"""One port for HTTP/1.1 and gRPC (h2c): ``--single-port``.

Knative, and KServe in serverless mode, give a container one port; its
users still want both protocols (kserve #2601). In this mode the HTTP port
sorts each accepted connection by its first bytes: a connection that opens
with the HTTP/2 client preface (``PRI * HTTP/2.0...``, what every gRPC
client sends first on a plain-text connection) is gRPC; anything else is
HTTP/1.1, and usually shows it at its first byte.

- HTTP/1.1: the HTTP server's own protocol object (Sanic's, with the fast
  lane) takes over the same transport, bytes unchanged: no copy, no second
  socket, the same limits and error shapes as on a two-port server.
- gRPC: ``grpc.aio`` cannot adopt a socket it did not accept, so the gRPC
  server listens on a private Unix socket (in a directory only this user
  can read) and the connection's bytes are copied both ways between the
  two sockets by two small asyncio protocols, with flow control: a side
  whose writes back up stops the other side's reads.

A connection that sends a prefix of the preface and then stalls is closed
after ``sort_timeout_s`` (the HTTP request timeout). Each ``--workers``
worker has its own private socket, so a connection stays in the worker
that accepted it.
"""

from __future__ import annotations

import asyncio
import enum
import os
import shutil
import tempfile
from collections.abc import Callable
from typing import cast

import structlog

log = structlog.get_logger("modelplatform.frontends.oneport")

#: What an HTTP/2 client sends first (RFC 9113, section 3.4).
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#: A splice side stops reading while its peer has this much left to write.
SPLICE_HIGH_WATER = 1024 * 1024
SPLICE_LOW_WATER = 256 * 1024

#: A protocol factory the HTTP server calls once per connection (Sanic passes keyword arguments).
ProtocolFactory = Callable[..., asyncio.Protocol]


class Kind(enum.Enum):
    HTTP1 = "http1"
    H2C = "h2c"


def sort_connection(first_bytes: bytes | bytearray) -> Kind | None:
    """Which server a connection is for, from its first bytes; None: not known yet."""
    seen = min(len(first_bytes), len(HTTP2_PREFACE))
    if first_bytes[:seen] != HTTP2_PREFACE[:seen]:
        return Kind.HTTP1
    return Kind.H2C if seen == len(HTTP2_PREFACE) else None


class OnePort:
    """The single-port front of one server process.

    ``grpc_address`` is where the gRPC server listens instead of its own
    port; :meth:`protocol` wraps the HTTP server's protocol factory;
    :meth:`close` ends the connections it still holds and removes the socket.
    """

    def __init__(self, sort_timeout_s: float) -> None:
        self.sort_timeout_s = sort_timeout_s
        self._folder = tempfile.mkdtemp(prefix="modelplatform-grpc-")  # mode 0700: this user only
        self.grpc_path = os.path.join(self._folder, "grpc.sock")
        #: Connections still being sorted, and spliced ones: closed by :meth:`close`.
        self._open: set[asyncio.Transport] = set()

    @property
    def grpc_address(self) -> str:
        return f"unix:{self.grpc_path}"

    def protocol(self, http_protocol: ProtocolFactory) -> ProtocolFactory:
        """A factory for the HTTP server: each connection is sorted, then served by the right server."""

        def sorting_protocol(**kwargs: object) -> asyncio.Protocol:
            return _Sorter(self, lambda: http_protocol(**kwargs))

        return sorting_protocol

    def close(self) -> None:
        for transport in list(self._open):
            transport.abort()
        self._open.clear()
        shutil.rmtree(self._folder, ignore_errors=True)

    # ---- what the connections report

    def _held(self, transport: asyncio.Transport) -> None:
        self._open.add(transport)

    def _released(self, transport: asyncio.Transport) -> None:
        self._open.discard(transport)


class _Sorter(asyncio.Protocol):
    """A new connection's first protocol: reads until it knows which server the connection is for."""

    def __init__(self, front: OnePort, http_protocol: Callable[[], asyncio.Protocol]) -> None:
        self._front = front
        self._http_protocol = http_protocol
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses
        self._front._held(self._transport)
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self._front.sort_timeout_s, self._stalled)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        kind = sort_connection(self._buffer)
        if kind is None or self._transport is None:
            return
        transport, first = self._transport, bytes(self._buffer)
        self._forget()
        if kind is Kind.HTTP1:
            _hand_over(transport, self._http_protocol(), first)
        else:
            _Splice(self._front, transport, first).start()

    def eof_received(self) -> bool:
        return False  # closed before it said anything usable: close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self._forget()

    def _stalled(self) -> None:
        if self._transport is not None:
            log.info("connection_timed_out", stage="sorting", seconds=self._front.sort_timeout_s)
            self._transport.close()
        self._forget()

    def _forget(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._transport is not None:
            self._front._released(self._transport)
        self._timer = self._transport = None


def _hand_over(transport: asyncio.Transport, protocol: asyncio.Protocol, first: bytes) -> None:
    """``protocol`` takes the connection as if it had accepted it, first bytes included."""
    transport.set_protocol(protocol)
    protocol.connection_made(transport)
    if not transport.is_closing():
        protocol.data_received(first)


class _Splice:
    """One gRPC connection: its bytes copied both ways between the client and the private socket."""

    def __init__(self, front: OnePort, client: asyncio.Transport, first: bytes) -> None:
        self._front = front
        self.client_side = _Side(self, client)
        self.server_side = _Side(self)
        self.client_side.peer, self.server_side.peer = self.server_side, self.client_side
        self.client_side.pending += first
        self._connecting: asyncio.Task[object] | None = None

    def start(self) -> None:
        client = self.client_side.transport
        assert client is not None
        self._front._held(client)
        client.set_protocol(self.client_side)
        client.set_write_buffer_limits(SPLICE_HIGH_WATER, SPLICE_LOW_WATER)
        client.pause_reading()  # until the gRPC server's side is connected
        self._connecting = asyncio.ensure_future(self._connect())

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.create_unix_connection(lambda: self.server_side, self._front.grpc_path)
        except OSError as error:  # gRPC not started yet (models loading) or already stopped
            log.info("grpc_connection_refused", reason=type(error).__name__)
            self.closed(self.client_side)

    def closed(self, side: _Side) -> None:
        """One side's connection ended: end the other once its last bytes are written."""
        if side is self.client_side and self.client_side.transport is not None:
            self._front._released(self.client_side.transport)
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()
        for each in (self.client_side, self.server_side):
            if each.transport is not None and not each.transport.is_closing():
                each.transport.close()


class _Side(asyncio.Protocol):
    """One socket of a splice: what it reads is written to its peer's socket."""

    def __init__(self, splice: _Splice, transport: asyncio.Transport | None = None) -> None:
        self._splice = splice
        self.transport = transport
        self.peer: _Side
        #: Bytes read before the peer's socket was connected.
        self.pending = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """The gRPC server's side connected: what the client sent so far goes first."""
        self.transport = server = cast(asyncio.Transport, transport)
        server.set_write_buffer_limits(SPLICE_HIGH_WATER, SPLICE_LOW_WATER)
        client = self.peer
        if client.pending:
            server.write(bytes(client.pending))
            client.pending.clear()
        if client.transport is not None and not client.transport.is_closing():
            client.transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        target = self.peer.transport
        if target is None:
            self.pending += data
        elif not target.is_closing():
            target.write(data)

    def eof_received(self) -> bool:
        return False  # HTTP/2 has no half-closed connections: end both

    def connection_lost(self, exc: Exception | None) -> None:
        self._splice.closed(self)

    # Flow control: this side's writes backed up, so its peer stops reading.
    def pause_writing(self) -> None:
        if self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer.transport is not None and not self.peer.transport.is_closing():
            self.peer.transport.resume_reading()
