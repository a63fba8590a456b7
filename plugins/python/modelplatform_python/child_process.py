"""The server's handle on one process instance's child (used by process_runner.py).

The child (child_main.py) is started with the multiprocessing *spawn*
context: never fork, the server process has gRPC and other threads whose
locks a forked child would inherit held. Inputs and outputs are pickled
across a Pipe (child_wire.py).

Each handle owns one thread (``ThreadPoolExecutor(1)``) that does every
blocking pipe operation and start / restart / stop of its child, awaited
with ``run_in_executor``: the event loop never blocks, calls of one
instance stay in order, and nothing is created per request.

Supervision: a child that fails during a call (it died: an exit, a signal,
a segfault; it did not answer within the execute timeout; it grew past its
memory bound, child_watch.py) fails that call with the reason
(:class:`~modelplatform_python.faults.InstanceFailed`), is killed if still
there, and a fresh child is started at once on the same thread, queued
behind the failed call: the next call on this instance finds the model
loaded again. A child that died while idle is replaced by the next call.
Each replacement is logged as ``instance_restarted`` with the reason.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from modelplatform import ModelConfig, ModelPlatformError, Unavailable
from modelplatform.statistics import custom_metrics

from .child_main import serve
from .child_watch import ResidentMemory, over_memory, wait_reply
from .child_wire import OK, UNLOAD, Reply, infer_message, rebuilt, unwrapped
from .faults import ChildFault, InstanceFailed
from .limits import ProcessLimits

log = structlog.get_logger("modelplatform.python")

#: How long a child's ``unload()`` may take before it is terminated.
UNLOAD_TIMEOUT_S = 10.0
#: How long a terminated or killed child may take to exit.
EXIT_TIMEOUT_S = 5.0


class ChildProcess:
    """One model instance served by a child process; every public method is called from the loop."""

    def __init__(
        self, config: ModelConfig, version_dir: Path, instance_index: int, limits: ProcessLimits
    ) -> None:
        self._config = config
        self._version_dir = version_dir
        self._index = instance_index
        self._limits = limits
        self._label = f"model '{config.name}' instance {instance_index}"
        self._name = f"{config.name}-{instance_index}"
        self._context = {"model": config.name, "instance": instance_index}  # for log events
        self._executor = ThreadPoolExecutor(1, thread_name_prefix=f"{self._name}-process")
        # Touched only on the executor's thread (except _kill, which only signals).
        self._process: BaseProcess | None = None
        self._conn: Connection | None = None
        self._memory: ResidentMemory | None = None  # only when the model has a memory bound
        self._restarts = 0
        self._stopped = False
        #: Under which name this instance's child's custom metrics are shown (child_wire.py).
        self._source = f"python-process:{config.name}:{instance_index}:{id(self)}"

    async def start(self) -> None:
        """Start the child and load the model; raises the child's load error."""
        await self._on_thread(self._start)

    async def infer(self, inputs: dict[str, np.ndarray]) -> Any:
        """``infer(inputs)`` in the child; its exception (a stand-in) or a crash raises here."""
        return await self._on_thread(self._infer, inputs)

    async def stop(self) -> None:
        """Unload the child, then make sure it has exited (terminate, kill)."""
        self._stopped = True
        stopping = asyncio.get_running_loop().run_in_executor(self._executor, self._stop)
        try:
            # Bounded even when the thread is stuck in a call that never returns:
            # killing the child ends that call (EOF), then _stop runs and reaps.
            done, _ = await asyncio.wait({stopping}, timeout=UNLOAD_TIMEOUT_S + 3 * EXIT_TIMEOUT_S)
            if not done:
                self._kill()
                done, _ = await asyncio.wait({stopping}, timeout=EXIT_TIMEOUT_S)
            if done:
                stopping.result()  # the user's unload() error, if any
            else:
                log.error("python_process_not_stopped", **self._context)
        finally:
            self._executor.shutdown(wait=False)

    async def _on_thread(self, function: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    # Everything below runs on the instance's thread.

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        process = context.Process(
            target=serve,
            args=(theirs, self._config, self._version_dir),
            name=f"modelplatform-{self._name}",
            daemon=True,  # multiprocessing terminates it at interpreter exit if stop() never ran
        )
        try:
            process.start()
        except BaseException:
            ours.close()
            raise
        finally:
            # Only the child holds its end now, so the child's death reads as EOF here.
            theirs.close()
        self._process, self._conn = process, ours
        if self._limits.max_memory_bytes is not None:
            assert process.pid is not None  # a started process has one
            self._memory = ResidentMemory(process.pid)
        try:
            reply = unwrapped(ours.recv(), self._source)  # the load: bounded only by the model's code
        except (EOFError, OSError):
            raise self._error(f"{self._ended()} while loading") from None
        if reply[0] != "ok":
            self._reap(grace_s=EXIT_TIMEOUT_S)  # it exits by itself after reporting
            raise rebuilt(reply)
        log.info("python_process_started", pid=process.pid, **self._context)

    def _infer(self, inputs: dict[str, np.ndarray]) -> Any:
        if self._stopped:
            raise Unavailable(f"{self._label} is unloading")
        if self._process is None or not self._process.is_alive():
            self._restart()
        assert self._conn is not None
        try:
            self._conn.send_bytes(infer_message(inputs))
            reply = unwrapped(wait_reply(self._conn, self._limits, self._memory), self._source)
        except (EOFError, OSError):
            raise self._failed(self._ended()) from None
        except ChildFault as fault:
            self._kill_now()
            raise self._failed(fault.reason) from None
        grown = over_memory(self._memory, self._limits)
        if grown is not None:  # this call is answered; the next one gets a fresh child
            self._restart_soon(f"{grown}, after answering a call")
        if reply[0] != "ok":
            raise rebuilt(reply)
        return reply[1]

    def _failed(self, reason: str) -> InstanceFailed:
        """The error for the call the child failed under; its replacement is queued."""
        log.error("instance_failed", reason=reason, **self._context)
        self._restart_soon(reason)
        return self._error(reason)

    def _error(self, reason: str) -> InstanceFailed:
        return InstanceFailed(self._config.name, self._index, reason)

    def _restart_soon(self, reason: str) -> None:
        """A fresh child, started on this thread right after the current call returns."""
        try:
            self._executor.submit(self._restart_quietly, reason)
        except RuntimeError:
            pass  # stop() shut the thread down: nothing is to be restarted

    def _restart_quietly(self, reason: str) -> None:
        if self._stopped:
            return
        try:
            self._replace(reason)
        except Exception as error:  # noqa: BLE001 - the next call tries again and tells why
            log.error("instance_restart_failed", reason=reason, error=_described(error), **self._context)

    def _restart(self) -> None:
        """Before a call: the child died while idle, or the last restart failed."""
        if self._process is not None:
            reason = self._ended()
            log.error("instance_failed", reason=reason, **self._context)
        else:
            reason = "its previous restart failed"
        try:
            self._replace(reason)
        except Exception as error:  # noqa: BLE001 - the call that needed it fails with the reason
            failure = _described(error)
        else:
            return
        raise self._error(f"restarting its process failed: {failure}")

    def _replace(self, reason: str) -> None:
        """Whatever is left of the child goes; a fresh one loads the model."""
        self._reap()
        started = time.monotonic()
        self._start()
        self._restarts += 1
        log.warning(
            "instance_restarted",
            reason=reason,
            restarts=self._restarts,
            pid=self._process.pid if self._process else None,
            seconds=round(time.monotonic() - started, 3),
            **self._context,
        )

    def _stop(self) -> None:
        process, conn = self._process, self._conn
        reply: Reply = OK
        if process is not None and conn is not None and process.is_alive():
            try:
                conn.send(UNLOAD)
                if conn.poll(UNLOAD_TIMEOUT_S):
                    reply = unwrapped(conn.recv(), self._source)
                    process.join(EXIT_TIMEOUT_S)
                else:
                    log.error("python_unload_timed_out", **self._context)
            except (EOFError, OSError):
                pass  # it died on the way out; _reap collects it
        self._reap()
        if reply[0] != "ok":
            raise rebuilt(reply)

    def _ended(self) -> str:
        """Why the child's pipe closed, after collecting the child."""
        process = self._process
        if process is not None:
            process.join(EXIT_TIMEOUT_S)  # the pipe closes a moment before the exit status exists
        code = None if process is None else process.exitcode
        self._reap()
        if code is None:
            return "its process closed its pipe and was stopped"
        if code < 0:
            return f"its process was killed by signal {_signal_name(-code)}"
        return f"its process exited with code {code}"

    def _kill_now(self) -> None:
        """A hung or overgrown child gets no chance to finish: SIGKILL, then collect it."""
        if self._process is not None:
            self._process.kill()
        self._reap()

    def _reap(self, grace_s: float = 0.0) -> None:
        """Afterwards the child has exited and the pipe is closed, whatever it took."""
        process, conn = self._process, self._conn
        self._process = self._conn = None
        custom_metrics().withdraw(self._source)  # the child's metrics end with it
        if self._memory is not None:
            self._memory.close()
            self._memory = None
        if conn is not None:
            conn.close()  # a child waiting for a message reads EOF and leaves by itself
        if process is None:
            return
        if grace_s and process.is_alive():
            process.join(grace_s)
        if process.is_alive():
            process.terminate()
            process.join(EXIT_TIMEOUT_S)
        if process.is_alive():
            process.kill()
            process.join(EXIT_TIMEOUT_S)
        if not process.is_alive():
            process.close()

    def _kill(self) -> None:
        """From the loop, only when the thread is stuck: SIGKILL ends its blocking recv."""
        process = self._process
        if process is None:
            return
        try:
            process.kill()
        except (ValueError, OSError):
            pass  # already closed or gone


def _described(error: Exception) -> str:
    if isinstance(error, ModelPlatformError):
        return error.message
    return f"{type(error).__name__}: {error}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
