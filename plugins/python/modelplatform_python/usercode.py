"""Calling a user model's code the same way everywhere: optional methods and generators.

The thread runner and the process child both follow these rules: a missing
method is skipped, and a method receives only as many of the arguments as
it declares (``load(self)`` and ``load(self, config, version_dir)`` both work).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator
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


async def produced_items(produced: Any) -> AsyncIterator[Any]:
    """What a generator ``infer``/``http`` yields: async ones on the loop, plain ones off it."""
    if inspect.isasyncgen(produced):
        async for item in produced:
            yield item
        return
    sentinel = object()
    while (item := await asyncio.to_thread(next, produced, sentinel)) is not sentinel:
        yield item
