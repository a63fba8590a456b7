"""Who may call the repository API, and in which control mode.

The restriction mirrors Triton's restricted APIs: an operator names one
header ``key:value``; requests without it are refused (HTTP 403, gRPC
PERMISSION_DENIED). Header names compare case-insensitively, values exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from modelplatform import PermissionDenied, Settings, Unavailable

__all__ = ["PermissionDenied", "Restriction", "check_control_mode"]


@dataclass(frozen=True, slots=True)
class Restriction:
    key: str = ""
    value: str = ""

    @classmethod
    def from_settings(cls, settings: Settings) -> Restriction:
        key, _, value = settings.repository_restrict.partition(":")
        return cls(key.strip().lower(), value.strip())

    def check(self, header: Callable[[str], str | None]) -> None:
        """``header(lowercase name)`` returns the request's value for that header or None."""
        if self.key and header(self.key) != self.value:
            raise PermissionDenied(f"This API is restricted, expecting header '{self.key}'")


def check_control_mode(mode: str) -> None:
    """Only explicit mode takes load/unload requests (Triton answers UNAVAILABLE)."""
    if mode != "explicit":
        raise Unavailable(
            f"explicit model load / unload is not allowed in model control mode '{mode}'"
        )
