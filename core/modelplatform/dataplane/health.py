"""Whether the server and its models are live and ready, what the server is, and its drain.

Changes when readiness changes meaning: the shutdown drain (draining.py),
``--strict-readiness``, a plugin's switch that takes the server out of
rotation while it still serves (grps ``offline``), the ``--workers`` wait
for every sibling. Such a switch is a *hold* with a reason, owned by whoever
placed it: :meth:`Health.hold_readiness` and :meth:`Health.release_readiness`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from modelplatform.dataplane.draining import Drain
from modelplatform.models import ModelManager


class Health:
    """Liveness, readiness (server and model), the server's metadata, and the shutdown drain."""

    def __init__(
        self, models: ModelManager, server_name: str, server_version: str, extensions: Sequence[str]
    ):
        self._models = models
        self.server_name = server_name
        self.server_version = server_version
        #: Filled once at start-up from every loaded plugin; never changed afterwards.
        self.extensions = tuple(extensions)
        self.live = True
        #: Set by the composition root once every listener is up, cleared when it stops.
        self.accepting = False
        #: The shutdown drain (draining.py): readiness turns false at its start, and the
        #: dataplane's calls are counted in flight so its end can answer them UNAVAILABLE.
        self.drain = Drain()
        self._holds: set[str] = set()

    def ready(self) -> bool:
        return (
            self.live
            and self.accepting
            and not self.drain.started
            and not self._holds
            and self._models.all_requested_ready()
        )

    def model_ready(self, name: str, version: str = "") -> bool:
        return not self.drain.started and self._models.is_ready(name, version)

    def hold_readiness(self, reason: str) -> None:
        """Look not-ready, while still serving, until :meth:`release_readiness` of ``reason``.

        Holding a reason already held, or releasing one not held, changes nothing.
        """
        self._holds.add(reason)

    def release_readiness(self, reason: str) -> None:
        self._holds.discard(reason)

    @property
    def readiness_holds(self) -> frozenset[str]:
        """The reasons the server looks not-ready now (a copy)."""
        return frozenset(self._holds)

    def server_metadata(self) -> dict[str, Any]:
        return {
            "name": self.server_name,
            "version": self.server_version,
            "extensions": list(self.extensions),
        }
