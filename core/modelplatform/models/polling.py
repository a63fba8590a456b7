"""Poll mode: rescan the repository every N seconds and follow it.

New or changed models are (re)loaded, removed ones unloaded. A model folder
whose files still change between two scans (being copied) is left alone
until two consecutive scans see the same files, so a half-written version
is never loaded. The scan runs in a worker thread, off the event loop. With
a remote repository, each poll first re-lists the bucket and fetches what is
new or changed into the local mirror (``RepositorySource.refresh``), then
scans the mirror as any folder.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from pathlib import Path

import structlog

from modelplatform.base.errors import ModelPlatformError
from modelplatform.models import ModelManager, repository
from modelplatform.models.remote_repository import RepositorySource

log = structlog.get_logger("modelplatform.models.polling")


class RepositoryPoller:
    def __init__(
        self,
        models: ModelManager,
        root: Path,
        interval: float,
        remote: RepositorySource | None = None,
    ) -> None:
        self.models = models
        self.root = root
        self.interval = interval
        self.remote = remote
        self._previous: dict[str, repository.Fingerprint] = {}

    async def run(self) -> None:
        """Poll until cancelled; one failed scan never stops the loop."""
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.poll_once()
            except Exception as error:  # noqa: BLE001 - keep polling
                log.error("repository_poll_failed", error=f"{type(error).__name__}: {error}")

    async def poll_once(self) -> None:
        if self.remote is not None:
            await asyncio.to_thread(self.remote.refresh)
        current = await asyncio.to_thread(repository.snapshot, self.root)
        # Unchanged since the last scan, and not an empty folder that a copy has just created.
        stable = {n: fp for n, fp in current.items() if fp and self._previous.get(n) == fp}
        self._previous = current
        changed = [n for n, fp in stable.items() if self.models.attempted_fingerprint(n) != fp]
        removed = [n for n in self.models.loaded_names() if n not in current]
        if changed or removed:
            log.info("repository_changed", load=changed, unload=removed)
        await asyncio.gather(
            *(self._apply(self.models.load(n, replicate=False), n, "load") for n in changed),
            *(self._apply(self.models.unload(n, replicate=False), n, "unload") for n in removed),
        )

    async def _apply(self, action: Awaitable[None], name: str, kind: str) -> None:
        try:
            await action
        except ModelPlatformError as error:
            log.warning("model_poll_action_failed", model=name, action=kind, reason=error.message)
