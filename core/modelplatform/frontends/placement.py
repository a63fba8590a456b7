"""Which CPUs the event loop and grpc.aio's poller thread run on (``--grpc-cpu-placement``).

grpc.aio hands every completion (a call arrived, an answer went out) from
its poller thread to the event loop through a socket pair. When the two
threads sit on different CPUs, each hand-off is a cross-CPU wake-up and the
call's data changes caches; on the 2-core machine of docs/performance.md a
one-at-a-time gRPC client got 1,750 calls/s that way and about 2,550/s with
both threads on one CPU. Under concurrency the loop alone needs a whole CPU,
and sharing it with the poller cost a fifth of the c8 rate. Neither
placement wins everywhere, so ``auto`` (the default) tries them: it starts
unpinned, tries one CPU for a fifth of a second just after calls start, and
then every 10 s or more, and keeps whichever answered more calls per second
(one CPU when they tie: less CPU for the same answers). ``together`` always shares one CPU,
``apart`` leaves both where the operating system puts them (no pinning).

A thread inherits its creator's CPUs, so threads and processes started while
the loop is pinned (model instance threads, ``asyncio.to_thread`` workers, a
framework's own pool, python model instances of ``kind: process``) would be
stuck on the one CPU: every tick gives each of them, and each thread of the
server's child processes, the CPUs the server started with.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import structlog

log = structlog.get_logger("modelplatform.placement")

#: Seconds between looks at the call rate (a tick at c1 still sees a few hundred calls).
TICK_SECS = 0.1
#: Ticks with one placement before the other is tried: soon after calls start coming, then
#: FIRST, doubled while the tries lose, up to MAX (10 s to a minute: each try costs the
#: loser's rate for two ticks).
QUICK_TRY_TICKS, FIRST_TRY_TICKS, MAX_TRY_TICKS = 2, 100, 600
#: A try: one tick to settle, then one measured against the mean of the last KEPT_TICKS before it.
KEPT_TICKS = 3
#: A try wins when its rate beats the kept one's by this factor (one CPU wins ties, within 5 %).
APART_MUST_WIN_BY, TOGETHER_MAY_LOSE_BY = 1.10, 0.95


def poller_threads() -> list[threading.Thread]:
    """grpc.aio's completion-queue poller(s): Python threads running ``_poll_wrapper``."""
    return [t for t in threading.enumerate() if "_poll_wrapper" in t.name and t.native_id is not None]


@dataclass
class Pinning:
    """Moves the loop's thread and the pollers between one CPU and every CPU allowed."""

    cpu: int
    allowed: frozenset[int]
    threads: tuple[int, ...]  # native ids: the loop's own first
    together: bool = False

    def place(self, together: bool) -> None:
        mask = {self.cpu} if together else set(self.allowed)
        for native_id in self.threads:
            os.sched_setaffinity(native_id, mask)
        was_together, self.together = self.together, together
        if was_together and not together:
            self._release_strays()  # started since the last tick: no tick would free them now

    def release_others(self) -> None:
        """While pinned: threads other than ours, and child processes' threads, stuck on the
        one CPU get the process's CPUs back."""
        if self.together:
            self._release_strays()

    def _release_strays(self) -> None:
        for native_id in _threads_and_children():
            if native_id in self.threads:
                continue
            try:
                if os.sched_getaffinity(native_id) == {self.cpu}:
                    os.sched_setaffinity(native_id, self.allowed)
            except OSError:  # it ended meanwhile
                continue


def _threads_and_children() -> list[int]:
    """This process's threads and its child processes' threads (Linux's /proc)."""
    ids: list[int] = []
    for name in _listed("/proc/self/task"):
        ids.append(int(name))
        try:
            with open(f"/proc/self/task/{name}/children") as children:
                pids = children.read().split()
        except OSError:
            continue
        for pid in pids:
            ids.extend(int(tid) for tid in _listed(f"/proc/{pid}/task"))
    return ids


def _listed(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


class Chooser:
    """The ``auto`` rule: given each tick's call rate, which placement to have next.

    Starts apart, as an unpinned server runs (so a concurrent load, which
    needs the loop on a CPU of its own, never starts on the slower one).
    After ``try_ticks`` ticks with calls it tries the other placement (one
    tick to settle, one measured) and keeps it when that tick's rate beats
    the mean of the last ``KEPT_TICKS`` ticks before the try. The first try
    comes after the tick in which calls started (partial, not counted) and
    two whole ones; when it wins, the placement it left is tried as soon,
    once, since the ticks it beat may have been the load's ramp-up. A try
    that loses doubles the wait before the next one, so a steady load is
    disturbed ever more rarely; an idle tick goes back to the start.
    """

    def __init__(self) -> None:
        self.together = False
        self._ticks = 0
        self._try_ticks = QUICK_TRY_TICKS
        self._phase = "idle"
        self._kept: deque[float] = deque(maxlen=KEPT_TICKS)  # the kept placement's last rates
        self._confirming = False  # the next try checks a quick try's win

    def step(self, rate: float) -> bool:
        """The placement for the next tick (True: together) after one tick at ``rate`` calls/s."""
        self._ticks += 1
        if self._phase == "settle":
            self._phase = "measure"
        elif self._phase == "measure":
            self._decide(rate)
        elif rate == 0:  # idle: as at the start, and a try soon after calls come
            self._phase, self.together = "idle", False
        elif self._phase == "idle":  # calls began during this tick: a partial one, not kept
            self._phase, self._ticks, self._try_ticks = "run", 0, QUICK_TRY_TICKS
            self._kept.clear()
            self._confirming = False
        else:
            self._kept.append(rate)
            if self._ticks >= self._try_ticks:
                self._phase, self.together = "settle", not self.together
        return self.together

    def _decide(self, tried_rate: float) -> None:
        kept_rate = sum(self._kept) / len(self._kept)
        factor = TOGETHER_MAY_LOSE_BY if self.together else APART_MUST_WIN_BY
        quick = self._try_ticks == QUICK_TRY_TICKS
        if tried_rate >= kept_rate * factor:
            # A quick try compared itself with the load's first ticks, which may have been its
            # ramp-up (clients connecting): the other placement is tried as soon, once, so a
            # win that only met a slow start does not hold for FIRST_TRY_TICKS.
            confirm = quick and not self._confirming
            self._try_ticks = QUICK_TRY_TICKS if confirm else FIRST_TRY_TICKS
            self._confirming = confirm
            self._kept.clear()
        else:
            self.together = not self.together
            self._try_ticks = min(max(self._try_ticks * 2, FIRST_TRY_TICKS), MAX_TRY_TICKS)
            self._confirming = False
        self._phase, self._ticks = "run", 0


class Placement:
    """Runs on the event loop: keeps the pinning the setting asks for, ticking for ``auto``."""

    def __init__(self, pinning: Pinning, calls: Callable[[], int], mode: str) -> None:
        self._pinning = pinning
        self._calls = calls
        self._mode = mode
        self._chooser = Chooser()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._pinning.place(self._mode == "together")
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        with contextlib.suppress(OSError):
            self._pinning.place(False)

    async def _run(self) -> None:
        before, calls = time.monotonic(), self._calls()
        while True:
            await asyncio.sleep(TICK_SECS)
            now, count = time.monotonic(), self._calls()
            rate = (count - calls) / max(now - before, 1e-6)
            before, calls = now, count
            try:
                self._tick(rate)
            except OSError as error:  # the system refused a move: stay as the system places us
                log.warning("grpc_cpu_placement_off", reason=str(error))
                with contextlib.suppress(OSError):
                    self._pinning.place(False)
                return

    def _tick(self, rate: float) -> None:
        if self._mode == "auto":
            together = self._chooser.step(rate)
            if together != self._pinning.together:
                self._pinning.place(together)
        self._pinning.release_others()


def start_placement(mode: str, calls: Callable[[], int]) -> Placement | None:
    """Pin the calling (event-loop) thread and grpc.aio's pollers as ``mode`` says; None when
    nothing is to be done (``apart``, a single CPU, no poller found, no affinity calls)."""
    if mode == "apart" or not hasattr(os, "sched_setaffinity"):
        return None
    allowed = frozenset(os.sched_getaffinity(0))
    pollers = poller_threads()
    if len(allowed) < 2 or not pollers:
        log.info("grpc_cpu_placement_off", reason="one CPU" if pollers else "no grpc.aio poller thread")
        return None
    loop_thread = threading.get_native_id()
    threads = (loop_thread, *(t.native_id for t in pollers if t.native_id is not None))
    pinning = Pinning(_current_cpu(allowed), allowed, threads)
    placement = Placement(pinning, calls, mode)
    try:
        placement.start()
    except OSError as error:  # e.g. a sandbox that forbids moving threads
        log.warning("grpc_cpu_placement_off", reason=str(error))
        with contextlib.suppress(OSError):
            pinning.place(False)  # the loop's thread comes first: it is unpinned before any other
        return None
    log.info("grpc_cpu_placement", mode=mode, cpu=pinning.cpu)
    return placement


def _current_cpu(allowed: frozenset[int]) -> int:
    """The CPU this thread runs on now (so ``--workers`` processes spread as the system put them)."""
    try:
        with open("/proc/thread-self/stat") as stat:
            cpu = int(stat.read().rsplit(")", 1)[1].split()[36])
    except (OSError, ValueError, IndexError):
        return min(allowed)
    return cpu if cpu in allowed else min(allowed)
