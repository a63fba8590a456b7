"""The repository API, protocol-neutral: both the HTTP and gRPC edges call these.

Load parameters arrive already decoded (``config`` text, file bytes); this
module turns them into a :class:`LoadOverride`, enforces the operator's
switches, and calls the model manager.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import structlog

from modelplatform import (
    IndexEntry,
    InvalidArgument,
    LoadOverride,
    ServerContext,
    Unsupported,
)

from .access import PermissionDenied, check_control_mode
from .uploads import write_model_folder

log = structlog.get_logger("modelplatform_repository")


@dataclass(frozen=True, slots=True)
class LoadParameters:
    config: str | None = None
    files: Mapping[str, bytes] = field(default_factory=dict)


class RepositoryOperations:
    def __init__(self, context: ServerContext) -> None:
        settings = context.settings
        self.models = context.models
        self.mode = settings.model_control_mode
        self.allow_upload = settings.allow_file_upload
        self.repository_name = settings.model_repository.resolve().name

    def check_repository(self, name: str) -> None:
        """One repository is served; naming it (or nothing) is fine, another is not."""
        if name and name != self.repository_name:
            raise Unsupported(
                f"repository '{name}' is not served; this server serves '{self.repository_name}'"
            )

    def index(self, ready_only: bool) -> list[IndexEntry]:
        return self.models.index(ready_only)

    async def load(self, name: str, params: LoadParameters) -> None:
        check_control_mode(self.mode)
        override = await self._override(params)
        await self.models.load(name, override)
        log.info("model_load_requested", model=name, config=params.config is not None,
                 files=len(params.files))

    async def unload(self, name: str) -> None:
        check_control_mode(self.mode)
        await self.models.unload(name)

    async def _override(self, params: LoadParameters) -> LoadOverride | None:
        config = LoadOverride.from_json(params.config).config  # checked: malformed is refused now
        if not params.files:
            return LoadOverride(config=config) if config is not None else None
        if not self.allow_upload:
            raise PermissionDenied(
                "file uploads through 'file:' load parameters are disabled on this server "
                "(the operator can enable them with --allow-file-upload)"
            )
        if config is None:
            raise InvalidArgument("load parameter 'config' is required when 'file:' parameters are sent")
        folder = await write_model_folder(params.files)
        return LoadOverride(config=config, model_dir=folder, temporary=True)
