"""The server's way out: not ready first, then no new connections, then the end of the budget.

On the first SIGTERM or SIGINT the composition root (server.py) walks the
phases below on a clock; this module holds the phase every front end and
the dataplane read, and the calls in flight it may have to end.

- ``SERVING``: the normal state.
- ``DRAINING``: every readiness surface answers not-ready, so load balancers
  remove the endpoint, while everything is still served (``--drain-delay-secs``).
- ``CLOSING``: the listeners are closed; a request on a connection that is
  still open is answered with ``Connection: close`` (HTTP) and gRPC has sent
  GOAWAY; calls in flight may finish (``--exit-timeout-secs``).
- ``ENDED``: the budget ran out: the calls still in flight end with
  UNAVAILABLE (503) and any new one is refused the same way.

Neutral: no transport is imported here; each front end renders
:class:`ServerShuttingDown` in its own error shape.
"""

from __future__ import annotations

import asyncio
import enum

from modelplatform.base.errors import Unavailable

#: The cancellation message that marks a call ended by the drain, not by its client.
_ENDED_BY_DRAIN = "ended by the server's drain"


class Phase(enum.Enum):
    SERVING = "serving"
    DRAINING = "draining"
    CLOSING = "closing"
    ENDED = "ended"


class ServerShuttingDown(Unavailable):
    """A call refused or ended because the server is shutting down (503 / UNAVAILABLE)."""

    def __init__(self) -> None:
        super().__init__("Server is shutting down")


class Drain:
    """The drain phase, and the dataplane calls in flight (the tasks running them)."""

    __slots__ = ("phase", "_calls", "entered")

    def __init__(self) -> None:
        self.phase = Phase.SERVING
        self._calls: set[asyncio.Task[object]] = set()
        #: Calls entered since start: the call rate grpc's CPU placement compares (placement.py).
        self.entered = 0

    @property
    def started(self) -> bool:
        """Readiness is false from the first signal on."""
        return self.phase is not Phase.SERVING

    @property
    def closing(self) -> bool:
        """Connections should close after their current request."""
        return self.phase is Phase.CLOSING or self.phase is Phase.ENDED

    @property
    def in_flight(self) -> int:
        return len(self._calls)

    def advance(self, phase: Phase) -> None:
        """Move on to ``phase``; never back (a later phase stays)."""
        order = list(Phase)
        if order.index(phase) > order.index(self.phase):
            self.phase = phase

    def enter(self) -> asyncio.Task[object] | None:
        """Count the current task as a call in flight; refused once the budget has run out."""
        if self.phase is Phase.ENDED:
            raise ServerShuttingDown()
        self.entered += 1
        task = asyncio.current_task()
        if task is not None:
            self._calls.add(task)
        return task

    def admit_now(self) -> bool:
        """Count a call that runs to its end without yielding to the loop, unless the budget
        has run out (False: the caller takes :meth:`enter`'s path, which refuses it). Such a
        call is never in flight while anything else runs, so it joins no set: nothing can
        wait for it or cancel it."""
        if self.phase is Phase.ENDED:
            return False
        self.entered += 1
        return True

    def leave(self, task: asyncio.Task[object] | None) -> None:
        self._calls.discard(task)

    def end(self) -> int:
        """The budget ran out: refuse new calls and cancel the ones in flight; returns how many."""
        self.advance(Phase.ENDED)
        calls = list(self._calls)
        for task in calls:
            task.cancel(_ENDED_BY_DRAIN)
        return len(calls)

    def ended(self, task: asyncio.Task[object] | None) -> bool:
        """Whether ``task``'s cancellation came from :meth:`end` (then it answers UNAVAILABLE).

        Takes the cancellation back (``uncancel``) so the call can still send
        its error reply; a client's own cancellation is left alone.
        """
        if self.phase is not Phase.ENDED or task is None or task not in self._calls:
            return False
        task.uncancel()
        return True
