"""What a load request replaces: the configuration and/or the model folder, as plain values.

The configuration is Triton's JSON (a plain dict), never protobuf: it crosses
to sibling workers (``--workers N``) as it is, and the config reader
(model_config.py) turns it into a ModelConfig when the load runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modelplatform.base import model_config
from modelplatform.models.repository import Fingerprint

#: Equal keys ask for the same thing: the configuration (canonical JSON) and the folder.
OverrideKey = tuple[str | None, str | None]
#: What a load read: the override's key and the files' fingerprint.
Source = tuple[OverrideKey, Fingerprint]


@dataclass(frozen=True, slots=True)
class LoadOverride:
    """A load request's replacement configuration and/or model folder.

    ``temporary`` hands ``model_dir`` (e.g. uploaded files) to the manager,
    which deletes it once no version loaded from it is left.
    """

    config: dict[str, Any] | None = None
    model_dir: Path | None = None
    temporary: bool = False

    @classmethod
    def from_json(
        cls,
        config: Mapping[str, Any] | str | bytes | None,
        model_dir: Path | None = None,
        temporary: bool = False,
    ) -> LoadOverride:
        """Check the configuration now, so a malformed one is refused before anything loads."""
        checked = model_config.config_json(config) if config is not None else None
        return cls(checked, model_dir, temporary)

    @property
    def key(self) -> OverrideKey:
        config = json.dumps(self.config, sort_keys=True) if self.config is not None else None
        return config, str(self.model_dir) if self.model_dir else None

    @property
    def given(self) -> bool:
        """Whether it replaces anything (siblings are told only then)."""
        return self.config is not None or self.model_dir is not None
