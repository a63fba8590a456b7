"""The shared-memory plugin's options, declared once (``register_options``) and read at start-up.

Both keep their top-level names (Triton's ``--allow-client-shm``;
``--max-shm-regions``, ``MODELPLATFORM_MAX_SHM_REGIONS``, ``max_shm_regions = 64``).
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplatform import InvalidArgument, Option, Settings

PLUGIN = "shared-memory"


def _check_positive(count: int) -> None:
    if count <= 0:
        raise InvalidArgument("max_shm_regions must be positive")


OPTIONS = (
    Option("allow_client_shm", bool, False, "Let clients register shared-memory regions (default off).",
           top_level=True),
    Option("max_shm_regions", int, 64, "Most shared-memory regions registered at once (default 64).",
           _check_positive, top_level=True),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class SharedMemoryOptions:
    #: Let clients register regions and name them in requests (Triton's --allow-client-shm).
    allow_client_shm: bool
    #: Most regions registered at once (system and CUDA together).
    max_shm_regions: int

    @classmethod
    def from_settings(cls, settings: Settings) -> SharedMemoryOptions:
        return cls(**settings.options_for(PLUGIN, OPTIONS))
