"""The server's handle on one process instance's child (used by process_runner.py).

The child (child_main.py) is started with the multiprocessing *spawn*
context: never fork, the server process has gRPC and other threads whose
locks a forked child would inherit held. Inputs and outputs are pickled
across a Pipe (child_wire.py).

Each handle owns one thread (``ThreadPoolExecutor(1)``) that does every
blocking pipe operation and start / restart / stop of its child, awaited
with ``run_in_executor``: the event loop never blocks, calls of one
instance stay in order, and nothing is created per request.

A child that dies during a call fails that call with the reason (exit code
or signal); the next call starts a fresh child (loading the model again).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from modelplatform import Internal, ModelConfig, ModelPlatformError, Unavailable

from .child_main import serve
from .child_wire import OK, UNLOAD, Reply, infer_message, rebuilt

log = structlog.get_logger("modelplatform.python")

#: How long a child's ``unload()`` may take before it is terminated.
UNLOAD_TIMEOUT_S = 10.0
#: How long a terminated or killed child may take to exit.
EXIT_TIMEOUT_S = 5.0


class ChildProcess:
    """One model instance served by a child process; every public method is called from the loop."""

    def __init__(self, config: ModelConfig, version_dir: Path, instance_index: int) -> None:
        self._config = config
        self._version_dir = version_dir
        self._label = f"model '{config.name}' instance {instance_index}"
        self._name = f"{config.name}-{instance_index}"
        self._context = {"model": config.name, "instance": instance_index}  # for log events
        self._executor = ThreadPoolExecutor(1, thread_name_prefix=f"{self._name}-process")
        # Touched only on the executor's thread (except _kill, which only signals).
        self._process: BaseProcess | None = None
        self._conn: Connection | None = None
        self._stopped = False

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
        try:
            reply = ours.recv()
        except (EOFError, OSError):
            raise Internal(f"{self._label}: {self._ended()} while loading") from None
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
            reply = self._conn.recv()
        except (EOFError, OSError):
            reason = self._ended()
            log.error("python_process_exited", reason=reason, **self._context)
            raise Internal(f"{self._label}: {reason}") from None
        if reply[0] != "ok":
            raise rebuilt(reply)
        return reply[1]

    def _restart(self) -> None:
        if self._process is not None:  # it died between calls (killed while idle)
            reason = self._ended()
            log.error("python_process_exited", reason=reason, **self._context)
        try:
            self._start()
        except ModelPlatformError as error:
            reason = error.message
        except Exception as error:  # noqa: BLE001 - the call that needed it fails with the reason
            reason = f"{type(error).__name__}: {error}"
        else:
            return
        raise Internal(f"{self._label}: restarting its process failed: {reason}")

    def _stop(self) -> None:
        process, conn = self._process, self._conn
        reply: Reply = OK
        if process is not None and conn is not None and process.is_alive():
            try:
                conn.send(UNLOAD)
                if conn.poll(UNLOAD_TIMEOUT_S):
                    reply = conn.recv()
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

    def _reap(self, grace_s: float = 0.0) -> None:
        """Afterwards the child has exited and the pipe is closed, whatever it took."""
        process, conn = self._process, self._conn
        self._process = self._conn = None
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


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
