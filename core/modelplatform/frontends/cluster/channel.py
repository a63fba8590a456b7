"""One authenticated connection between the supervisor and a worker, bridged to asyncio.

``multiprocessing.connection`` frames and pickles each message and, before
the first one, runs an HMAC challenge with the supervisor's authkey (random
per supervisor, see wire.ClusterAddress): a process without the key cannot
join, and nothing it sends is unpickled. No framing of our own.

That API is blocking, so each channel owns two daemon threads:

- a reader blocked in ``recv()`` that hands every message to the event loop
  with ``call_soon_threadsafe``. (Not ``loop.add_reader``: ``recv()`` reads a
  whole message, and would block the loop on one that has half arrived.)
- a writer draining a FIFO queue with ``send()``: :meth:`Channel.send` never
  blocks the loop, messages keep their order, and a peer that reads slowly
  holds up only this writer.

:meth:`Channel.close` lets the writer flush what is queued, then shut the
socket down, which ends both readers (here and at the peer) with EOF. The
writer closes the descriptor only after the reader has finished, so no
thread ever uses a descriptor number the process may have reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import queue
import socket
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection

import structlog

from modelplatform.frontends.cluster.wire import Message

log = structlog.get_logger("modelplatform.frontends.cluster")

#: Queued after the last message to send: the writer shuts the connection down.
_CLOSE = object()


class Channel:
    """Messages to and from one peer; callbacks run on the event loop that started it."""

    def __init__(
        self,
        connection: Connection,
        on_message: Callable[[Message], None],
        on_closed: Callable[[], None],
    ) -> None:
        self._connection = connection
        self._on_message = on_message
        self._on_closed = on_closed
        self._outbox: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._reader = threading.Thread(target=self._read, name="cluster-reader", daemon=True)
        self._writer = threading.Thread(target=self._write, name="cluster-writer", daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._context: contextvars.Context | None = None

    def start(self) -> None:
        """Start both threads; call from the event loop that should receive the messages."""
        self._loop = asyncio.get_running_loop()
        self._context = contextvars.copy_context()  # callbacks log with the starter's context
        self._reader.start()
        self._writer.start()

    def send(self, message: Message) -> None:
        """Queue ``message``; never blocks. Messages after :meth:`close` are dropped."""
        self._outbox.put(message)

    def close(self) -> None:
        self._outbox.put(_CLOSE)

    def _read(self) -> None:
        try:
            while True:
                self._call(self._on_message, self._connection.recv())
        except (EOFError, OSError):
            pass  # the peer or our writer shut the connection down
        finally:
            self._outbox.put(_CLOSE)  # the writer stops too

    def _write(self) -> None:
        try:
            while (message := self._outbox.get()) is not _CLOSE:
                self._connection.send(message)
        except ConnectionError:
            pass  # the peer went away; its reader has seen or will see the end
        except OSError as error:
            log.warning("cluster_send_failed", error=str(error))
        finally:
            _shut_down(self._connection)
            self._reader.join()
            self._connection.close()
            self._call(self._on_closed)

    def _call(self, callback: Callable[..., None], *args: object) -> None:
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is listening
            self._loop.call_soon_threadsafe(callback, *args, context=self._context)


def _shut_down(connection: Connection) -> None:
    """Shut the socket down for both directions: wakes a thread blocked in ``recv()``."""
    with contextlib.suppress(OSError):
        with socket.socket(fileno=os.dup(connection.fileno())) as sock:
            sock.shutdown(socket.SHUT_RDWR)
