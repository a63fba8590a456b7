"""What a plugin is handed at start-up: :class:`ServerContext`, frozen.

It holds the frozen settings and declarations and the :class:`DataPlane`;
the plugin manager, the model manager and the backend registry stay with the
composition root (server.py). Plugins that must share an object (grps-rest
and grps-grpc share one runtime) ask :meth:`ServerContext.shared` for it by
type instead of writing into a dict.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from modelplatform.base.broadcasting import Broadcast
from modelplatform.base.codecs import CodecRegistry
from modelplatform.base.settings import Settings
from modelplatform.dataplane.facade import DataPlane

if TYPE_CHECKING:
    from modelplatform.dataplane.declarations import GrpcService, HttpDialect, HttpRoute

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ListenerContexts:
    """The context each listener serves TLS with (None: plain text), built once at start-up
    by the composition, which registers it with :meth:`ServerContext.shared`."""

    by_listener: Callable[[str], ssl.SSLContext | None]


def _plain_text() -> ListenerContexts:
    return ListenerContexts(lambda listener: None)


class _SharedObjects:
    """One object per type, made on first request, and each dialect's routes, asked once;
    the lock makes each once per server."""

    def __init__(self) -> None:
        self._by_type: dict[type, Any] = {}
        self.lock = threading.RLock()  # a factory may ask for another shared object
        #: Dialect name -> its declared routes (ServerContext.routes_of).
        self.routes: dict[str, Sequence[HttpRoute]] = {}

    def get(self, kind: type[T], factory: Callable[[], T]) -> T:
        with self.lock:
            if kind not in self._by_type:
                made = factory()
                if not isinstance(made, kind):
                    raise TypeError(f"factory for {kind.__name__} made a {type(made).__name__}")
                self._by_type[kind] = made
            return self._by_type[kind]


@dataclass(frozen=True, eq=False)
class ServerContext:
    """Everything a plugin may use at start-up; handed to route factories, service adders and hooks."""

    settings: Settings
    codecs: CodecRegistry
    dialects: Mapping[str, HttpDialect]
    grpc_services: Sequence[GrpcService]
    dataplane: DataPlane
    #: Run-time settings shared with the ``--workers`` siblings (broadcasting.py).
    broadcast: Broadcast = field(default_factory=Broadcast)
    _shared: _SharedObjects = field(default_factory=_SharedObjects, init=False, repr=False)

    def ssl_context(self, listener: str) -> ssl.SSLContext | None:
        """The server context a plugin's own listener serves with (``"metrics"``), or None for plain text.

        Give it to ``asyncio.start_server(ssl=...)``: certificates re-read on
        SIGHUP or when their files change reach the connections made after.
        """
        return self.shared(ListenerContexts, _plain_text).by_listener(listener)

    def shared(self, kind: type[T], factory: Callable[[], T]) -> T:
        """The one ``kind`` object of this server, made by ``factory()`` on first use.

        Keyed by type, so a plugin's own class is its key and two plugins
        cannot overwrite each other's object. Safe to call from start-up code
        on any thread; the factory runs once and must return a ``kind``.
        """
        return self._shared.get(kind, factory)

    def routes_of(self, dialect: str) -> Sequence[HttpRoute]:
        """The routes dialect ``dialect`` declared, as the HTTP front end serves them.

        Its ``routes(context)`` is asked once per server, on first use (the front
        end asks every dialect at start-up): a plugin that describes the server
        (the OpenAPI documents) reads every dialect's declarations here. A
        dialect's own route factory must not ask for its own routes.
        """
        with self._shared.lock:
            routes = self._shared.routes.get(dialect)
            if routes is None:
                routes = self._shared.routes[dialect] = tuple(self.dialects[dialect].routes(self))
            return routes
