"""Client-controlled sizes and their bounds, resolved once from Settings."""

from __future__ import annotations

from dataclasses import dataclass

from modelplatform import Settings

#: Deepest tensor nesting accepted (numpy's own limit is 64 dimensions).
MAX_RANK = 32


@dataclass(frozen=True, slots=True)
class Limits:
    max_tensor_elements: int
    max_bytes_element: int

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        return cls(settings.max_tensor_elements, settings.max_bytes_element)
