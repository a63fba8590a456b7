"""The child side of a process instance (see processes.py): one ``Model`` in its own process.

:func:`serve` is the target of a process started with the multiprocessing
*spawn* context. It imports ``model.py`` (loader.py), creates ``Model()``,
calls its optional ``load`` as the thread mode does, then answers the
parent's messages one at a time over its end of a Pipe:

- ``("infer", inputs)``: ``infer(inputs)`` (an ``async def infer`` runs on
  this process's own event loop);
- ``("unload",)``: ``unload()``, reply, exit.

Every reply, the one after load included, is ``("ok", value)`` or
``("error", type_name, message, platform_class)``. Exceptions travel as
type name and text, never pickled: a class defined in ``model.py`` cannot
be unpickled in the server process, which never imports the user's file.
``platform_class`` names the modelplatform error class the exception is
(or derives from), so a user's ``InvalidArgument`` keeps its status code.
"""

from __future__ import annotations

import asyncio
import inspect
import pickle
import signal
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import modelplatform
from modelplatform import InvalidArgument, ModelConfig, Unsupported

from .backend import _call_flexibly
from .loader import import_model_module
from .processes import INSTANCE_KIND, PICKLE_PROTOCOL, PROCESS

Reply = tuple[Any, ...]


def serve(conn: Connection, config: ModelConfig, version_dir: Path) -> None:
    """Load the model, answer requests until told to unload or the parent goes away."""
    # Ctrl-C in a terminal signals the whole process group; the server stops its
    # children itself (unload, then terminate), so SIGINT must not kill us mid-call.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)  # sync user code calling get_event_loop() finds this one
    try:
        try:
            model = _load(loop, config, Path(version_dir))
        except Exception as error:  # noqa: BLE001 - the parent's load fails with it
            _send(conn, _error(error))
            return
        if _send(conn, ("ok", None)):
            _answer(conn, loop, model)
    finally:
        loop.close()
        conn.close()


def _load(loop: asyncio.AbstractEventLoop, config: ModelConfig, version_dir: Path) -> Any:
    module = import_model_module(version_dir)
    refused = f"is not supported when parameter '{INSTANCE_KIND}' is '{PROCESS}' (use 'thread')"
    if getattr(module, "TritonPythonModel", None) is not None:
        raise Unsupported(f"model '{config.name}': a Triton TritonPythonModel {refused}")
    model_class = getattr(module, "Model", None)
    if model_class is None or not callable(getattr(model_class, "infer", None)):
        raise InvalidArgument(f"{version_dir}/model.py must define class Model with infer()")
    infer = model_class.infer
    if inspect.isgeneratorfunction(infer) or inspect.isasyncgenfunction(infer):
        raise Unsupported(f"model '{config.name}': a generator (streaming) infer() {refused}")
    if getattr(model_class, "http", None) is not None:
        raise Unsupported(f"model '{config.name}': an http() method {refused}")
    model = model_class()
    _run(loop, getattr(model, "load", None), config, version_dir)
    return model


def _answer(conn: Connection, loop: asyncio.AbstractEventLoop, model: Any) -> None:
    infer = model.infer
    awaits = inspect.iscoroutinefunction(infer)  # resolved once, as in the thread mode
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            # The server went away without asking (killed): clean up and leave, no orphan.
            _quietly(loop, getattr(model, "unload", None))
            return
        if message[0] == "unload":
            try:
                _run(loop, getattr(model, "unload", None))
                reply: Reply = ("ok", None)
            except Exception as error:  # noqa: BLE001 - reported to the parent, which logs it
                reply = _error(error)
            _send(conn, reply)
            return
        try:
            inputs = message[1]
            reply = ("ok", loop.run_until_complete(infer(inputs)) if awaits else infer(inputs))
        except Exception as error:  # noqa: BLE001 - user code fails its own request only
            reply = _error(error)
        if not _send(conn, reply):
            _quietly(loop, getattr(model, "unload", None))
            return


def _run(loop: asyncio.AbstractEventLoop, method: Any, *args: Any) -> None:
    """Call an optional user method with the thread mode's rules (backend._call)."""
    if method is None:
        return
    if inspect.iscoroutinefunction(method):
        loop.run_until_complete(method(*args))
    else:
        _call_flexibly(method, *args)


def _quietly(loop: asyncio.AbstractEventLoop, method: Any) -> None:
    try:
        _run(loop, method)
    except Exception:  # noqa: BLE001, S110 - nobody is left to tell
        pass


def _send(conn: Connection, reply: Reply) -> bool:
    """False when the parent is gone (then this process just ends, quietly)."""
    try:
        data = pickle.dumps(reply, protocol=PICKLE_PROTOCOL)
    except Exception as error:  # noqa: BLE001 - e.g. infer() returned something unpicklable
        data = pickle.dumps(_error(error), protocol=PICKLE_PROTOCOL)
    try:
        conn.send_bytes(data)
    except OSError:
        return False
    return True


def _error(error: BaseException) -> Reply:
    public = vars(modelplatform)
    platform = next((c.__name__ for c in type(error).__mro__ if public.get(c.__name__) is c), None)
    return ("error", type(error).__name__, str(error), platform)
