"""The graceful drain on SIGTERM/SIGINT, on the clock of ``--drain-delay-secs`` and ``--exit-timeout-secs``.

The first signal starts :func:`drain`:

1. readiness turns false on every surface at once; everything is still
   served for the drain delay (endpoint removal reaches load balancers);
2. the listeners close: HTTP answers the next request on each open
   connection with ``Connection: close``, gRPC sends GOAWAY;
3. calls and streams in flight may finish within the exit timeout; those
   left at its end are answered UNAVAILABLE (503);
4. the server stops as before (shutdown hooks, models unloaded) and the
   process exits 0.

A second signal exits at once with 128 + its number (:class:`Signals`). A
watchdog ends the process (status 0) if anything outlives the budget, e.g.
a model's thread still sleeping in a call that was already answered.
The countdown is logged once a second (``drain_countdown``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    from modelplatform.composition.server import RunningServer

log = structlog.get_logger("modelplatform.composition.server")

#: How often the drain looks at what is left (and logs every ``1 / TICK_SECS``-th time).
TICK_SECS = 0.1
#: Calls still in flight are ended this long before the deadline, so their answers leave in time.
END_BEFORE_DEADLINE_SECS = 1.0
#: Past the deadline, the unload and the process's own exit get this long before the watchdog.
EXIT_MARGIN_SECS = 3.0
#: Once the server has stopped, the process exits within this (threads it cannot stop or not).
EXIT_AFTER_STOP_SECS = 1.0


class Signals:
    """The first SIGTERM/SIGINT sets :attr:`received`; a second one exits the process at once."""

    def __init__(self, signals: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM)) -> None:
        self.received = asyncio.Event()
        loop = asyncio.get_running_loop()
        for number in signals:
            loop.add_signal_handler(number, self._on_signal, number)

    def _on_signal(self, number: signal.Signals) -> None:
        if not self.received.is_set():
            log.info("shutdown_signal_received", signal=number.name)
            self.received.set()
            return
        log.warning("exit_forced", signal=number.name)
        exit_now(128 + number)


def exit_now(status: int) -> None:
    """End the process without waiting for anything (logs are flushed first)."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(status)


def arm_watchdog(seconds: float, reason: str) -> None:
    """Exit 0 after ``seconds`` unless the process has ended by then (earlier arms still count)."""

    def expire() -> None:
        log.warning("exit_watchdog_fired", reason=reason)
        exit_now(0)

    timer = threading.Timer(max(seconds, 0.0), expire)
    timer.daemon = True
    timer.start()


async def drain(server: RunningServer, delay: float, timeout: float) -> None:
    """Walk the drain phases; returns once nothing is in flight or the budget ran out."""
    started = time.monotonic()
    deadline = started + delay + timeout
    arm_watchdog(delay + timeout + EXIT_MARGIN_SECS, "the drain and unload outlived the exit timeout")
    server.begin_drain()
    log.info("drain_started", drain_delay_secs=delay, exit_timeout_secs=timeout)
    await _countdown(server, "draining", started + delay, deadline, stop_when_idle=False)
    server.stop_accepting(grace=max(deadline - time.monotonic(), 0.0))
    log.info("listeners_closed", secs_left=round(deadline - time.monotonic(), 1))
    end_at = deadline - min(END_BEFORE_DEADLINE_SECS, timeout / 4)
    if not await _countdown(server, "closing", end_at, deadline, stop_when_idle=True):
        ended = server.end_calls()
        log.warning("drain_timed_out", calls_ended=ended)
        await _countdown(server, "ended", deadline, deadline, stop_when_idle=True)
    log.info("drain_finished", secs=round(time.monotonic() - started, 2))


async def _countdown(
    server: RunningServer, phase: str, until: float, deadline: float, stop_when_idle: bool
) -> bool:
    """Wait until ``until``, logging once a second; True if it stopped because all was idle."""
    ticks = 0
    while (now := time.monotonic()) < until:
        left = server.in_flight()
        if stop_when_idle and left.idle:
            return True
        if ticks % round(1 / TICK_SECS) == 0:
            log.info(
                "drain_countdown",
                phase=phase,
                secs_left=round(deadline - now, 1),
                calls=left.calls,
                connections=left.connections,
                grpc_busy=left.grpc,
            )
        ticks += 1
        await asyncio.sleep(min(TICK_SECS, until - now))
    return stop_when_idle and server.in_flight().idle
