"""Triton's response sender: how a decoupled ``TritonPythonModel`` answers.

A model with ``model_transaction_policy { decoupled: true }`` gets each
request's sender from ``request.get_response_sender()`` and calls
``sender.send(response, flags=...)`` any number of times, from ``execute``
or from a thread of its own, ending with the flag
``TRITONSERVER_RESPONSE_COMPLETE_FINAL`` (with a last response or alone).
The sender hands each response to the event loop, where the runner's stream
yields it. A sender called off the loop waits while ``WINDOW`` responses are
unread, so a model faster than its client does not pile them up in memory.
Once the client has gone, ``is_cancelled()`` turns true and ``send`` raises,
so a model producing forever stops.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

from .triton_utils import TRITONSERVER_RESPONSE_COMPLETE_FINAL, TritonModelException

#: Responses a sender may have unread before a sending thread waits.
WINDOW = 64

#: (a pb_utils.InferenceResponse, None for a bare final flag, or fail()'s error; final)
Sent = tuple[Any, bool]


class ResponseSender:
    """One request's sender; ``responses()`` is read on the loop that created it."""

    def __init__(self, model: str) -> None:
        self._model = model
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._queue: asyncio.Queue[Sent] = asyncio.Queue()
        self._room = asyncio.Event()
        self._cancelled = False
        self._closed = False

    def send(self, response: Any = None, flags: int = 0) -> None:
        """Triton's ``InferenceResponseSender.send``: callable from any thread."""
        final = bool(flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        self._check(response, final)
        if final:
            self._closed = True
        if threading.get_ident() == self._loop_thread:
            self._queue.put_nowait((response, final))  # the loop cannot wait for itself
            return
        future = asyncio.run_coroutine_threadsafe(self._deliver((response, final)), self._loop)
        future.result()

    def is_cancelled(self) -> bool:
        """True once the client went away: nothing sent reaches it any more."""
        return self._cancelled

    def fail(self, error: Exception) -> None:
        """End the responses with ``error`` (``execute`` raised); called on the loop."""
        self._closed = True
        self._queue.put_nowait((error, True))

    def cancel(self) -> None:
        """The reader stopped: refuse further sends and release every waiting sender."""
        self._cancelled = True
        self._room.set()

    async def responses(self) -> AsyncIterator[Sent]:
        """What the model sends, in order, until its final flag (or the error of ``fail``)."""
        while True:
            sent = await self._queue.get()
            self._room.set()
            yield sent
            if sent[1]:
                return

    def _check(self, response: Any, final: bool) -> None:
        if self._cancelled:
            raise self._gone()
        if self._closed:
            raise TritonModelException("Unable to send response. Response sender has been closed.")
        if response is None and not final:
            raise TritonModelException(
                "send() without a response must carry TRITONSERVER_RESPONSE_COMPLETE_FINAL"
            )

    async def _deliver(self, sent: Sent) -> None:
        while self._queue.qsize() >= WINDOW and not self._cancelled:
            self._room.clear()
            await self._room.wait()
        if self._cancelled:
            raise self._gone()
        self._queue.put_nowait(sent)

    def _gone(self) -> TritonModelException:
        return TritonModelException(
            f"model '{self._model}': the request was cancelled (the client went away)"
        )
