"""The models the server knows: the repository's index, versions, configurations, loads and unloads.

Changes when the repository or the model lifecycle changes (remote stores,
load overrides, unload semantics); not when a request's path does.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from modelplatform.base import model_config
from modelplatform.base.errors import ModelPlatformError
from modelplatform.base.model_config import ModelConfig
from modelplatform.dataplane.views import ModelMetadata, model_metadata, version_info
from modelplatform.models import IndexEntry, LoadOverride, ModelManager
from modelplatform.models.views import VersionInfo

#: A load's replacement configuration: Triton's JSON form, as a document or its text.
ConfigJson = Mapping[str, Any] | str


class Repository:
    """What is on disk and loaded, by name; loading and unloading it."""

    def __init__(self, models: ModelManager) -> None:
        #: Private: plugins see models only through the views the methods below return.
        self._models = models

    def index(self, ready_only: bool = False) -> list[IndexEntry]:
        """Models on disk and loaded, by name; one never loaded has an entry with only a name."""
        return self._models.index(ready_only)

    async def repository_index(self, ready_only: bool = False) -> list[IndexEntry]:
        """:meth:`index` as the repository holds it now: a remote repository (``s3://``...)
        is listed (one bounded listing per call, see RemoteListing), not its local mirror.

        The repository extension's index calls this; raises ``Unavailable``
        naming the URL when the store cannot be listed in time.
        """
        return await self._models.repository_index(ready_only)

    def version_status(self, name: str) -> list[VersionInfo]:
        """Every version of ``name`` the server knows, oldest first, READY or not; [] if none."""
        return [version_info(v) for v in self._models.versions(name)]

    def model_config(self, name: str, version: str = "") -> ModelConfig:
        return self._models.get(name, version).config

    def model_metadata(self, name: str, version: str = "") -> ModelMetadata:
        chosen = self._models.get(name, version)
        ready = [v.version_str for v in self._models.versions(name) if v.ready]
        return model_metadata(name, chosen, ready, bool(version))

    def repository_config(self, name: str) -> ModelConfig | None:
        """``name``'s configuration as its repository folder declares it, loaded or not.

        For start-up decisions (a dialect's custom routes), not for requests:
        it reads the file. None when the repository has no folder ``name``;
        InvalidArgument when its config.pbtxt does not parse.
        """
        model_dir = self._models.root / name
        if not name or name != Path(name).name or name.startswith(".") or not model_dir.is_dir():
            return None
        return model_config.read_config(model_dir)

    async def load(
        self,
        name: str,
        config: ConfigJson | None = None,
        *,
        model_dir: Path | None = None,
        temporary: bool = False,
    ) -> None:
        """Load or reload ``name``; raises with the reason when it does not load.

        ``config`` replaces the repository's configuration (Triton's JSON form;
        an override without backend or platform keeps the folder's). ``model_dir``
        loads from that folder instead of the repository's; ``temporary`` hands
        the folder over to be deleted once nothing loaded from it is left (also
        when this call fails). With ``--workers N`` every worker loads it.
        """
        try:
            override = LoadOverride.from_json(config, model_dir, temporary)
        except ModelPlatformError:
            if temporary and model_dir is not None:
                await asyncio.to_thread(shutil.rmtree, model_dir, True)
            raise
        await self._models.load(name, override)

    async def unload(self, name: str, *, unload_dependents: bool = False) -> None:
        """Unload every version of ``name`` once its requests in flight have finished.

        ``unload_dependents`` unloads the ensembles whose steps call ``name``
        first; without it their requests in flight finish before ``name`` goes.
        """
        await self._models.unload(name, dependents=unload_dependents)
