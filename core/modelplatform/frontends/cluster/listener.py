"""The supervisor's door: accepts workers that hold the authkey, refuses anything else.

``Listener.accept()`` blocks (and runs the authkey challenge), so it runs in a
daemon thread until every worker has said :class:`~.wire.Hello`; each joined
connection is handed to the event loop. The socket lives in a private (0700)
temporary folder, so only this user's processes can even try.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Callable
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, Listener

import structlog

from modelplatform.frontends.cluster.wire import ClusterAddress, Hello

log = structlog.get_logger("modelplatform.frontends.cluster")

#: How long a connection that passed the challenge may take to say which worker it is.
HELLO_TIMEOUT_S = 10.0


class WorkerListener:
    """Accepts ``count`` workers; ``joined(index, connection)`` runs on the event loop."""

    def __init__(
        self, address: ClusterAddress, count: int, joined: Callable[[int, Connection], None]
    ) -> None:
        self.address = address
        self.count = count
        self._joined = joined
        self._listener = Listener(address.path, "AF_UNIX", authkey=address.authkey)
        self._stopping = threading.Event()

    def start(self) -> None:
        """Start accepting; call from the event loop that should receive the workers."""
        loop = asyncio.get_running_loop()
        accepting = threading.Thread(target=self._accept, args=(loop,), name="cluster-accept")
        accepting.daemon = True  # a worker that never comes must not keep the process alive
        accepting.start()

    def close(self) -> None:
        self._stopping.set()
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as poke:
            poke.connect(self.address.path)  # wakes an accept() still waiting
        self._listener.close()

    def _accept(self, loop: asyncio.AbstractEventLoop) -> None:
        accepted = 0
        while accepted < self.count and not self._stopping.is_set():
            joined = self._next()
            if joined is None:
                continue
            with contextlib.suppress(RuntimeError):  # the loop has closed
                loop.call_soon_threadsafe(self._joined, *joined)
            accepted += 1

    def _next(self) -> tuple[int, Connection] | None:
        """The next worker that proves it holds the key and says hello, else None."""
        try:
            connection = self._listener.accept()
            return _hello(connection), connection
        except AuthenticationError as error:
            log.warning("worker_connection_refused", reason=str(error))
        except (EOFError, ConnectionError) as error:
            if not self._stopping.is_set():
                log.warning("worker_connection_failed", reason=f"{type(error).__name__}: {error}")
        except OSError as error:  # the listening socket itself: closed, or broken for good
            if not self._stopping.is_set():
                log.error("worker_listener_failed", reason=f"{type(error).__name__}: {error}")
            self._stopping.set()
        return None


def _hello(connection: Connection) -> int:
    if not connection.poll(HELLO_TIMEOUT_S):
        connection.close()
        raise EOFError("no hello from the worker")
    message = connection.recv()
    if not isinstance(message, Hello):
        connection.close()
        raise EOFError(f"expected a hello, got {type(message).__name__}")
    return message.index
