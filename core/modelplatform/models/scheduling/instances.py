"""Which instance answers a call that bypasses ``execute``: a stream or a raw call.

Such calls are not batched and may hold their instance for as long as a
client reads, so they do not wait for an idle instance either: each takes
the next instance in turn, and every instance of an ``instance_group`` gets
its share. A backend that cannot serve concurrent calls on one instance
must guard itself, as it must for ``execute`` during a stream.
"""

from __future__ import annotations

from collections.abc import Sequence

from modelplatform.base.errors import Unavailable
from modelplatform.models.backend import Backend


class InstanceRing:
    """The instances of one model version, handed out round-robin with their index."""

    def __init__(self, instances: Sequence[Backend]) -> None:
        self._instances = tuple(enumerate(instances))
        self._turn = 0

    def next(self) -> tuple[int, Backend]:
        if not self._instances:
            raise Unavailable("model has no loaded instance")
        chosen = self._instances[self._turn]
        self._turn = (self._turn + 1) % len(self._instances)
        return chosen
