"""The one HTTP front end: Sanic serving every declared route, the fast lane for hot ones.

Internal to the core; plugins declare routes with :mod:`modelplatform.declarations`.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any

import structlog

from .fastlane import FastLaneProtocol
from .sanic_app import create_app

if TYPE_CHECKING:
    from sanic import Sanic

    from ..context import ServerContext

log = structlog.get_logger("modelplatform.http")


class HttpFront:
    """The HTTP port of one server process: started and stopped by the composition root."""

    def __init__(self, context: ServerContext) -> None:
        self.context = context
        self.app: Sanic = create_app(context)
        self._server: Any = None

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
            protocol=FastLaneProtocol if self.uses_lane else None,
        )
        await self._server.startup()
        await self._server.before_start()
        await self._server.after_start()
        log.info("http_started", host=settings.host, port=settings.http_port, fast_lane=self.uses_lane)

    async def stop(self) -> None:
        if self._server is None:
            return
        await self._server.before_stop()
        self._server.close()
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
