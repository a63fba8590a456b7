"""What runs inside a process instance's child: one ``Model`` in its own process.

:func:`serve` is the target of a process started with the multiprocessing
*spawn* context (child_process.py). It imports ``model.py`` (loader.py),
creates ``Model()``, calls its optional ``load`` as the thread runner does
(usercode.py), then answers the server's messages one at a time over its
end of a Pipe (child_wire.py): ``infer(inputs)`` (an ``async def infer``
runs on this process's own event loop), or ``unload()``, reply, exit.
"""

from __future__ import annotations

import asyncio
import inspect
import pickle
import signal
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from modelplatform import ModelConfig, Unsupported

from .bls import CallsRefused
from .child_wire import OK, PICKLE_PROTOCOL, UNLOAD, MetricsOutbox, Reply, error_reply
from .kinds import INSTANCE_KIND, PROCESS
from .loader import import_model_module, model_class
from .usercode import call_flexibly, taken


def serve(conn: Connection, config: ModelConfig, version_dir: Path) -> None:
    """Load the model, answer requests until told to unload or the server goes away."""
    # Ctrl-C in a terminal signals the whole process group; the server stops its
    # children itself (unload, then terminate), so SIGINT must not kill us mid-call.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)  # sync user code calling get_event_loop() finds this one
    try:
        try:
            model = _load(loop, config, Path(version_dir))
        except Exception as error:  # noqa: BLE001 - the server's load fails with it
            _send(conn, error_reply(error))
            return
        if _send(conn, OK):
            _answer(conn, loop, model)
    finally:
        loop.close()
        conn.close()


def _load(loop: asyncio.AbstractEventLoop, config: ModelConfig, version_dir: Path) -> Any:
    module = import_model_module(version_dir, config.default_model_filename)
    if getattr(module, "TritonPythonModel", None) is not None:
        raise _refused(config, "a Triton TritonPythonModel")
    found = model_class(module, version_dir)
    if inspect.isgeneratorfunction(found.infer) or inspect.isasyncgenfunction(found.infer):
        raise _refused(config, "a generator (streaming) infer()")
    if getattr(found, "http", None) is not None:
        raise _refused(config, "an http() method")
    model = found()
    no_calls = CallsRefused(config.name)  # no DataPlane in this process: no BLS
    _run(loop, getattr(model, "load", None), config, version_dir, no_calls)
    return model


def _refused(config: ModelConfig, what: str) -> Unsupported:
    return Unsupported(
        f"model '{config.name}': {what} is not supported when parameter "
        f"'{INSTANCE_KIND}' is '{PROCESS}' (use 'thread')"
    )


def _answer(conn: Connection, loop: asyncio.AbstractEventLoop, model: Any) -> None:
    infer = model.infer
    awaits = inspect.iscoroutinefunction(infer)  # resolved once, as in the thread runner
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            # The server went away without asking (killed): clean up and leave, no orphan.
            _quietly(loop, getattr(model, "unload", None))
            return
        if message == UNLOAD:
            _send(conn, _unloaded(loop, model))
            return
        try:
            inputs = message[1]
            reply = ("ok", loop.run_until_complete(infer(inputs)) if awaits else infer(inputs))
        except Exception as error:  # noqa: BLE001 - user code fails its own request only
            reply = error_reply(error)
        if not _send(conn, reply):
            _quietly(loop, getattr(model, "unload", None))
            return


def _unloaded(loop: asyncio.AbstractEventLoop, model: Any) -> Reply:
    try:
        _run(loop, getattr(model, "unload", None))
    except Exception as error:  # noqa: BLE001 - reported to the server, which logs it
        return error_reply(error)
    return OK


def _run(loop: asyncio.AbstractEventLoop, method: Any, *args: Any) -> None:
    """Call an optional user method with the thread runner's rules (usercode.py)."""
    if method is None:
        return
    if inspect.iscoroutinefunction(method):
        loop.run_until_complete(method(*taken(method, args)))
    else:
        call_flexibly(method, *args)


def _quietly(loop: asyncio.AbstractEventLoop, method: Any) -> None:
    try:
        _run(loop, method)
    except Exception:  # noqa: BLE001 - nobody is left to tell
        pass


#: This child's custom metrics ride on its replies (one process, one model instance).
_OUTBOX = MetricsOutbox()


def _send(conn: Connection, reply: Reply) -> bool:
    """False when the server is gone (then this process just ends, quietly)."""
    try:
        data = pickle.dumps(_OUTBOX.wrapped(reply), protocol=PICKLE_PROTOCOL)
    except Exception as error:  # noqa: BLE001 - e.g. infer() returned something unpicklable
        data = pickle.dumps(error_reply(error), protocol=PICKLE_PROTOCOL)
    try:
        conn.send_bytes(data)
    except OSError:
        return False
    return True
