"""The repository API, protocol-neutral: both the HTTP and gRPC edges call these.

Load parameters arrive already decoded (``config`` text, file bytes); this
module enforces the operator's switches, writes uploaded files to a
temporary model folder, and asks the dataplane to load, unload or list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from modelplatform import IndexEntry, InvalidArgument, PermissionDenied, ServerContext, Unsupported

from .access import check_control_mode
from .options import RepositoryOptions
from .uploads import write_model_folder

log = structlog.get_logger("modelplatform_repository")


@dataclass(frozen=True, slots=True)
class LoadParameters:
    config: str | None = None
    files: Mapping[str, bytes] = field(default_factory=dict)


class RepositoryOperations:
    def __init__(self, context: ServerContext) -> None:
        settings = context.settings
        self.repository = context.dataplane.repository
        self.mode = settings.model_control_mode
        self.allow_upload = RepositoryOptions.from_settings(settings).allow_file_upload
        self.repository_name = settings.model_repository.resolve().name

    def check_repository(self, name: str) -> None:
        """One repository is served; naming it (or nothing) is fine, another is not."""
        if name and name != self.repository_name:
            raise Unsupported(
                f"repository '{name}' is not served; this server serves '{self.repository_name}'"
            )

    async def index(self, ready_only: bool) -> list[IndexEntry]:
        """Every model of the repository as it is now (a bucket is listed, not its mirror)."""
        return await self.repository.repository_index(ready_only)

    async def load(self, name: str, params: LoadParameters) -> None:
        check_control_mode(self.mode)
        folder = await self._uploaded_folder(params)
        temporary = folder is not None
        await self.repository.load(name, params.config, model_dir=folder, temporary=temporary)
        log.info(
            "model_load_requested", model=name, config=params.config is not None, files=len(params.files)
        )

    async def unload(self, name: str, unload_dependents: bool = False) -> None:
        check_control_mode(self.mode)
        await self.repository.unload(name, unload_dependents=unload_dependents)

    async def _uploaded_folder(self, params: LoadParameters) -> Path | None:
        """The ``file:`` parameters written to a temporary folder the dataplane then owns."""
        if not params.files:
            return None
        if not self.allow_upload:
            raise PermissionDenied(
                "file uploads through 'file:' load parameters are disabled on this server "
                "(the operator can enable them with --allow-file-upload)"
            )
        if params.config is None:
            raise InvalidArgument("load parameter 'config' is required when 'file:' parameters are sent")
        return await write_model_folder(params.files)
