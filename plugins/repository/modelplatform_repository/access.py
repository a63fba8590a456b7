"""In which control mode the repository API takes load/unload requests.

Who may call it is the core's business now: ``--repository-restrict key:value``
is the old spelling of ``--http-restricted-api=model-repository:key=value``
plus the same ``--grpc-restricted-protocol`` (core/modelplatform/base/access/;
every route here declares category ``model-repository``).
"""

from __future__ import annotations

from modelplatform import Unavailable

__all__ = ["check_control_mode"]


def check_control_mode(mode: str) -> None:
    """Only explicit mode takes load/unload requests (Triton answers UNAVAILABLE)."""
    if mode != "explicit":
        raise Unavailable(f"explicit model load / unload is not allowed in model control mode '{mode}'")
