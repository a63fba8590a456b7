"""Several choices' streams as one, in the order their pieces arrive.

``n`` > 1 (or several prompts) runs every choice at once. One task per
choice feeds a queue; closing the merged stream (the client left, or an
error) cancels the tasks, which closes each model's stream.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import TypeVar

T = TypeVar("T")
#: A choice's stream ended.
DONE = None


async def merged(streams: Sequence[AsyncIterator[T]]) -> AsyncIterator[tuple[int, T | None]]:
    """``(index, item)`` for each item, ``(index, None)`` when stream ``index`` ends."""
    if len(streams) == 1:  # the common case: no task, no queue
        async with contextlib.aclosing(streams[0]):  # type: ignore[type-var]  # pieces(): an async generator
            async for item in streams[0]:
                yield 0, item
        yield 0, DONE
        return
    queue: asyncio.Queue[tuple[int, T | None, BaseException | None]] = asyncio.Queue()
    tasks = [asyncio.create_task(_feed(index, stream, queue)) for index, stream in enumerate(streams)]
    try:
        for _ in range(len(streams)):
            while True:
                index, got, error = await queue.get()
                if error is not None:
                    raise error
                yield index, got
                if got is DONE:
                    break
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _feed(
    index: int, stream: AsyncIterator[T], queue: asyncio.Queue[tuple[int, T | None, BaseException | None]]
) -> None:
    try:
        async with contextlib.aclosing(stream):  # type: ignore[type-var]  # pieces(): an async generator
            async for item in stream:
                await queue.put((index, item, None))
        await queue.put((index, DONE, None))
    except asyncio.CancelledError:
        raise
    except Exception as error:  # noqa: BLE001 - handed to the reader, which raises it
        await queue.put((index, DONE, error))
