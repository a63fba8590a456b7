"""Where a model instance's synchronous calls run: inline when cheap, else on its thread.

Handing a call to a worker thread costs the event loop tens of microseconds
(a future, a wake-up, a GIL hand-over both ways), several times what a tiny
model such as ``simple`` spends computing. So every instance measures the
wall time of its calls (an exponential moving average) and runs them inline
on the loop while that average stays within ``INLINE_BUDGET_NS``; above it,
calls go to the instance's own worker thread, so a slow model never stalls
the loop for more than the one call that revealed it is slow. The first
calls always run on the thread: a model is not trusted to be cheap until
measured. Wall time (not CPU time) is measured on purpose: a model that
sleeps or waits on I/O must not look cheap.

Each instance has exactly one thread, so with ``instance_group { count: N }``
N instances run N calls at once; they overlap in practice only where the
model's code releases the GIL (numpy on large arrays, I/O, native
libraries), see docs/backends/python.md.
"""

from __future__ import annotations

import asyncio
import enum
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar

T = TypeVar("T")

#: Calls whose average wall time is at most this run inline on the event loop.
INLINE_BUDGET_NS = 100_000
#: Weight of the newest call in the moving average (1/8: a burst of slow calls
#: moves it past the budget at once, a single fast call does not pull it back).
_WEIGHT = 0.125
#: Calls measured on the thread before a model may be run inline.
_PROBES = 4


class Deferred(enum.Enum):
    """What :meth:`InstanceCaller.try_inline` answers for a call it did not run."""

    TO_THREAD = "to_thread"


class NeedsThread(BaseException):  # not an error: a request to move
    """Raised by a blocking call (a nested model call, bls.py) made inline on the loop.

    A BaseException so user code's ``except Exception`` does not swallow it:
    the caller catches it, keeps the instance on its thread from then on, and
    runs the call again there.
    """


_state = threading.local()
#: Whether a model's call is running inline on the event loop right now.
_inline = False


def inline_call_running() -> bool:
    return _inline


def keep_on_thread() -> None:
    """The model running on this thread blocks on other models: never run it inline."""
    caller = getattr(_state, "caller", None)
    if caller is not None:
        caller.pinned = True


class InstanceCaller:
    """Runs one model instance's synchronous calls, inline or on its own thread."""

    def __init__(
        self, name: str, budget_ns: int = INLINE_BUDGET_NS, thread_setup: Callable[[], object] | None = None
    ) -> None:
        self._name = name
        #: Run once on the instance's thread when it starts (bls.bind: the thread's context
        #: keeps the instance's calls for good, so no call pays to carry a context over).
        self._thread_setup = thread_setup
        self._budget_ns = budget_ns
        self._average_ns = float("inf")
        self._probes = 0
        self._executor: ThreadPoolExecutor | None = None
        #: Set once the model blocked on a nested call: it stays on its thread.
        self.pinned = False

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        result = self.try_inline(function, *args)
        if result is Deferred.TO_THREAD:
            return await self.on_thread(function, *args)
        return result

    def runs_inline(self) -> bool:
        """Whether the next call would run inline: once measured (the probes), never
        pinned, and cheap on average."""
        return not self.pinned and self._probes >= _PROBES and self._average_ns <= self._budget_ns

    def try_inline(self, function: Callable[..., T], *args: Any) -> T | Literal[Deferred.TO_THREAD]:
        """The call run on the loop now, when the instance may run inline; else TO_THREAD, and
        the caller awaits :meth:`on_thread` (a plain call, not a coroutine: the request path
        of a cheap model pays one frame here, not two)."""
        if not self.runs_inline():
            return Deferred.TO_THREAD
        global _inline  # noqa: PLW0603 - the loop runs one inline call at a time
        _inline = True
        started = time.perf_counter_ns()
        try:
            return function(*args)
        except NeedsThread:
            self.pinned = True  # the caller runs it again on the thread, where it may block
            return Deferred.TO_THREAD
        finally:
            _inline = False
            # Inline only after the probes (above): the moving average alone.
            self._average_ns += _WEIGHT * (time.perf_counter_ns() - started - self._average_ns)

    async def on_thread(self, function: Callable[..., T], *args: Any) -> T:
        """The call on the instance's own thread (started on first use)."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(
                1, thread_name_prefix=self._name, initializer=self._thread_setup
            )
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._on_thread, function, *args)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None

    def _on_thread(self, function: Callable[..., T], *args: Any) -> T:
        _state.caller = self
        return self._timed(function, *args)

    def _timed(self, function: Callable[..., T], *args: Any) -> T:
        started = time.perf_counter_ns()
        try:
            return function(*args)
        finally:
            self._observe(time.perf_counter_ns() - started)

    def _observe(self, elapsed_ns: int) -> None:
        if self._probes < _PROBES:
            self._probes += 1
            first = self._average_ns == float("inf")
            self._average_ns = elapsed_ns if first else max(self._average_ns, elapsed_ns)
            return
        self._average_ns += _WEIGHT * (elapsed_ns - self._average_ns)
