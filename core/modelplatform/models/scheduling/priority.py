"""The dynamic batcher's queue: one FIFO per priority level, each bounded by its queue policy.

Triton's ``PriorityQueue``: level 1 is served first, then 2, and so on (a
model without ``priority_levels`` has the one level 0). Within a level,
requests whose queue timeout passed under ``timeout_action: DELAY`` wait
behind the level's other requests, yet still before every lower level's.
Each level holds at most its policy's ``max_queue_size`` requests, delayed
ones included.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Generic, Protocol, TypeVar

from modelplatform.base.errors import QueueFull
from modelplatform.base.model_config import DynamicBatching, QueuePolicy


class Queued(Protocol):
    #: The priority level the request waits in (DynamicBatching.level_of).
    level: int


Q = TypeVar("Q", bound=Queued)


class _Level(Generic[Q]):
    def __init__(self, policy: QueuePolicy) -> None:
        self.policy = policy
        self.waiting: deque[Q] = deque()
        #: Past their queue timeout (DELAY): served after ``waiting``.
        self.delayed: deque[Q] = deque()

    def __len__(self) -> int:
        return len(self.waiting) + len(self.delayed)


class PriorityQueue(Generic[Q]):
    def __init__(self, batching: DynamicBatching) -> None:
        self._levels: dict[int, _Level[Q]] = {
            level: _Level(batching.policy_for(level)) for level in batching.levels()
        }
        #: Every deque in serving order: level 1's waiting, its delayed, level 2's waiting, ...
        self._order = tuple(d for level in self._levels.values() for d in (level.waiting, level.delayed))

    def __len__(self) -> int:
        return sum(len(d) for d in self._order)

    def __bool__(self) -> bool:
        return any(self._order)

    def __iter__(self) -> Iterator[Q]:
        """The queued requests in the order they are served."""
        for queue in self._order:
            yield from queue

    def deques(self) -> tuple[deque[Q], ...]:
        """Each FIFO in serving order, for a batcher to take from and put back into."""
        return self._order

    def push(self, item: Q, model: str) -> None:
        level = self._levels[item.level]
        if len(level) >= level.policy.max_queue_size:
            raise QueueFull(model, len(level))
        level.waiting.append(item)

    def delay(self, item: Q) -> None:
        """Move a request past its queue timeout behind its level's others (DELAY)."""
        level = self._levels[item.level]
        try:
            level.waiting.remove(item)
        except ValueError:
            return  # already taken into a batch, or dropped
        level.delayed.append(item)

    def first(self) -> Q:
        """The request served next; the queue must not be empty."""
        return next(iter(self))

    def clear(self) -> list[Q]:
        """Empty every level; returns what was queued."""
        items = list(self)
        for queue in self._order:
            queue.clear()
        return items
