"""Calling a user model's optional methods (``load``, ``unload``) the same way everywhere.

The thread runner and the process child both follow these rules: a missing
method is skipped, and a method receives only as many of the arguments as
it declares (``load(self)`` and ``load(self, config, version_dir)`` both work).
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any


async def call_optional(method: Any, *args: Any) -> None:
    """Await an ``async def`` method on the loop; run a plain one in a worker thread."""
    if method is None:
        return
    if inspect.iscoroutinefunction(method):
        await method(*args)
    else:
        await asyncio.to_thread(call_flexibly, method, *args)


def call_flexibly(method: Any, *args: Any) -> Any:
    """Pass only as many arguments as the user's method takes."""
    try:
        count = len(inspect.signature(method).parameters)
    except (TypeError, ValueError):
        count = len(args)
    return method(*args[:count])
