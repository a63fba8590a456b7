"""The repository plugin's option, declared once (``register_options``) and read at start-up.

``allow_file_upload`` keeps its top-level name (``--allow-file-upload``,
``MODELPLATFORM_ALLOW_FILE_UPLOAD``, ``allow_file_upload = true``).
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplatform import Option, Settings

PLUGIN = "repository"

OPTIONS = (
    Option("allow_file_upload", bool, False, "Accept model files in load requests.",
           top_level=True),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class RepositoryOptions:
    #: Accept ``file:<version>/<name>`` load parameters (lets a client install code).
    allow_file_upload: bool

    @classmethod
    def from_settings(cls, settings: Settings) -> RepositoryOptions:
        return cls(**settings.options_for(PLUGIN, OPTIONS))
