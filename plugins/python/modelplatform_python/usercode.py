"""Calling a user model's code the same way everywhere: optional methods and generators.

The thread runner and the process child both follow these rules: a missing
method is skipped, and a method receives only as many of the arguments as
it declares (``load(self)`` and ``load(self, config, version_dir)`` both work).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncGenerator
from typing import Any


async def call_optional(method: Any, *args: Any) -> None:
    """Await an ``async def`` method on the loop; run a plain one in a worker thread."""
    if method is None:
        return
    if inspect.iscoroutinefunction(method):
        await method(*taken(method, args))
    else:
        await asyncio.to_thread(call_flexibly, method, *args)


def call_flexibly(method: Any, *args: Any) -> Any:
    """Pass only as many arguments as the user's method takes."""
    return method(*taken(method, args))


def taken(method: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The first arguments, as many as ``method`` declares (``*args``: all of them)."""
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return args
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return args
    return args[: len(parameters)]


async def produced_items(produced: Any) -> AsyncGenerator[Any, None]:
    """What a generator ``infer``/``http`` yields: async ones on the loop, plain ones off it.

    Closing this iterator early (the client left) closes the model's generator
    now, so its ``finally`` runs and it is never advanced again; a step still
    running on its thread finishes first (a running generator cannot be closed).
    """
    if inspect.isasyncgen(produced):
        async with contextlib.aclosing(produced):
            async for item in produced:
                yield item
        return
    sentinel = object()
    step: asyncio.Future[Any] | None = None
    try:
        while True:
            step = asyncio.ensure_future(asyncio.to_thread(next, produced, sentinel))
            item = await asyncio.shield(step)  # a cancelled wait leaves the step to finish
            if item is sentinel:
                return
            yield item
    finally:
        _close_after(step, produced)


def _close_after(step: asyncio.Future[Any] | None, produced: Any) -> None:
    """Close a plain generator off the loop, once its running step (if any) is done."""
    close = getattr(produced, "close", None)  # a plain iterator has nothing to close
    if close is None:
        return
    if step is None or step.done():
        asyncio.get_running_loop().run_in_executor(None, close)
    else:

        def close_when_done(done: asyncio.Future[Any]) -> None:
            _retrieved(done)
            _close_after(None, produced)

        step.add_done_callback(close_when_done)


def _retrieved(step: asyncio.Future[Any]) -> None:
    """Read a step's outcome nobody awaits any more (asyncio warns of an unread exception)."""
    if not step.cancelled():
        step.exception()
