"""The one HTTP front end: Sanic serving every declared route, the fast lane for hot ones.

Internal to the core; plugins declare routes with :mod:`modelplatform.dataplane.declarations`.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog
from sanic.server.protocols.http_protocol import HttpProtocol

from modelplatform.frontends.http.fastlane import FastLaneProtocol
from modelplatform.frontends.http.sanic_app import create_app
from modelplatform.frontends.http.sanic_seam import idle_secs
from modelplatform.frontends.tls import mode_of, server_tls

if TYPE_CHECKING:
    from sanic import Sanic

    from modelplatform.dataplane.context import ServerContext

log = structlog.get_logger("modelplatform.frontends.http")


class HttpFront:
    """The HTTP port of one server process: started and stopped by the composition root."""

    def __init__(self, context: ServerContext, wrap_protocol: Callable[[Any], Any] | None = None) -> None:
        self.context = context
        self.app: Sanic[Any, Any] = create_app(context)
        self._server: Any = None
        #: ``--single-port``: wraps the per-connection protocol factory (oneport.OnePort.protocol).
        self._wrap_protocol = wrap_protocol

    @property
    def uses_lane(self) -> bool:
        return self.context.settings.http_fast_lane and bool(self.app.ctx.lane_routes.starts)

    async def start(self) -> None:
        settings = self.context.settings
        shared = settings.workers > 1
        self._server = await self.app.create_server(
            host=None if shared else settings.host,
            port=None if shared else settings.http_port,
            sock=_shared_socket(settings.host, settings.http_port) if shared else None,
            return_asyncio_server=True,
            access_log=False,
            protocol=self._protocol(),
            # TLS is below the protocol: the fast lane reads decrypted bytes as it reads plain ones
            ssl=server_tls(self.context).ssl_context("http"),
        )
        await self._server.startup()
        await self._server.before_start()
        await self._server.after_start()
        tls = mode_of(server_tls(self.context).listener("http"))
        log.info(
            "http_started", host=settings.host, port=settings.http_port, fast_lane=self.uses_lane, tls=tls
        )

    def _protocol(self) -> Any:
        protocol = FastLaneProtocol if self.uses_lane else None
        if self._wrap_protocol is None:
            return protocol
        return self._wrap_protocol(protocol or HttpProtocol)

    @property
    def open_connections(self) -> int:
        return 0 if self._server is None else len(self._server.connections)

    def stop_accepting(self) -> None:
        """Close the listening socket; open connections stay until their current request is answered."""
        if self._server is not None and self._server.server is not None:
            self._server.server.close()

    def close_idle(self, idle_for: float) -> None:
        """Close the connections with no request in progress that have been quiet ``idle_for`` seconds.

        Quiet ones only: a client that is using its connection gets its next answer
        with ``Connection: close`` instead of a reset on a request already sent.
        """
        if self._server is None:
            return
        for connection in list(self._server.connections):
            if idle_secs(connection) >= idle_for:
                connection.close_if_idle()

    async def stop(self) -> None:
        if self._server is None:
            return
        await self._server.before_stop()
        self._server.close()
        for connection in list(self._server.connections):
            connection.abort()  # what the drain left open: its requests were answered or ended
        await self._server.wait_closed()
        await self._server.after_stop()


def _shared_socket(host: str, port: int) -> socket.socket:
    """A listening socket other workers bind too (SO_REUSEPORT: the kernel spreads connections)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock
