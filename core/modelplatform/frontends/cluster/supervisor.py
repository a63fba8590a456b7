"""The parent process of ``--workers N``: starts the workers, connects them, stops them.

It serves no requests. Each worker is a spawned process running a complete
server (server.run_worker) with the supervisor's :class:`~.wire.ClusterAddress`
in its spawn arguments; the workers join through a :class:`WorkerListener`
and talk through the :class:`Relay`. A worker that exits stops the whole
server (no silent half-service). SIGINT/SIGTERM are forwarded to every worker as
SIGTERM: each drains (shutdown.py) and the supervisor waits for them within the
budget; a second signal ends them and the supervisor at once.
"""

from __future__ import annotations

import asyncio
import functools
import multiprocessing
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

import structlog

from modelplatform.base.settings import Settings
from modelplatform.frontends.cluster.channel import Channel
from modelplatform.frontends.cluster.listener import WorkerListener
from modelplatform.frontends.cluster.relay import Relay
from modelplatform.frontends.cluster.wire import ClusterAddress
from modelplatform.frontends.tls import any_tls

log = structlog.get_logger("modelplatform.frontends.cluster")

#: Beyond the drain delay and exit timeout, how long a worker may take to exit before it is killed.
STOP_MARGIN_S = 5.0

Worker = Callable[[Settings, int, ClusterAddress], None]


class Supervisor:
    """Starts ``settings.workers`` workers and relays between them until one exits."""

    def __init__(self, settings: Settings, worker: Worker) -> None:
        self.settings = settings
        self.count = settings.workers
        self._worker = worker
        self._folder = Path(tempfile.mkdtemp(prefix="modelplatform-cluster-"))  # mode 0700
        self.address = ClusterAddress(str(self._folder / "cluster.sock"), secrets.token_bytes(32))
        self._relay = Relay(self.count)
        self._processes: list[BaseProcess] = []

    async def run(self) -> int:
        """Serve until a signal (exit code 0) or until a worker exits (1)."""
        listener = WorkerListener(self.address, self.count, self._joined)
        listener.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._signalled, stop, sig)
        if any_tls(self.settings):  # each worker re-reads its certificates
            loop.add_signal_handler(signal.SIGHUP, self._signal_workers, signal.SIGHUP)
        try:
            self._start_workers()
            return await self._wait(stop)
        finally:
            await self._stop_workers()
            listener.close()
            shutil.rmtree(self._folder, ignore_errors=True)

    def _signalled(self, stop: asyncio.Event, number: signal.Signals) -> None:
        """The first signal drains every worker; a second one ends them and this process at once."""
        if not stop.is_set():
            log.info("shutdown_signal_received", signal=number.name)
            stop.set()
            return
        log.warning("exit_forced", signal=number.name)
        self._signal_workers()  # their second signal: each exits at once
        shutil.rmtree(self._folder, ignore_errors=True)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(128 + number)

    def _start_workers(self) -> None:
        context = multiprocessing.get_context("spawn")  # no inherited loop, threads or gRPC state
        for index in range(self.count):
            arguments = (self.settings, index, self.address)  # the authkey travels only here
            process = context.Process(target=self._worker, args=arguments, name=f"worker-{index}")
            process.start()
            self._processes.append(process)
        log.info("workers_started", workers=self.count, pids=[p.pid for p in self._processes])

    def _joined(self, index: int, connection: Connection) -> None:
        channel = Channel(
            connection,
            functools.partial(self._relay.received, index),
            functools.partial(self._relay.left, index),
        )
        self._relay.joined(index, channel)
        channel.start()
        log.info("worker_joined", worker=index)

    async def _wait(self, stop: asyncio.Event) -> int:
        exited = asyncio.ensure_future(self._first_exit())
        stopped = asyncio.ensure_future(stop.wait())
        await asyncio.wait({exited, stopped}, return_when=asyncio.FIRST_COMPLETED)
        exited.cancel()
        stopped.cancel()
        if stop.is_set():
            return 0
        log.error("worker_exited", code=exited.result())
        return 1

    async def _first_exit(self) -> int | None:
        while all(p.is_alive() for p in self._processes):
            await asyncio.sleep(0.2)
        return next(p.exitcode for p in self._processes if not p.is_alive())

    async def _stop_workers(self) -> None:
        """Every worker drains (SIGTERM); each gets the drain's whole budget, then is killed."""
        self._signal_workers()
        budget = self.settings.drain_delay_secs + self.settings.exit_timeout_secs + STOP_MARGIN_S
        deadline = time.monotonic() + budget
        for process in self._processes:
            await asyncio.to_thread(process.join, max(deadline - time.monotonic(), 0.0))
            if process.is_alive():
                log.error("worker_killed", pid=process.pid, after_secs=budget)
                process.kill()
        log.info("workers_stopped", codes=[p.exitcode for p in self._processes])

    def _signal_workers(self, number: signal.Signals = signal.SIGTERM) -> None:
        for process in self._processes:
            if process.is_alive() and process.pid is not None:
                os.kill(process.pid, number)
