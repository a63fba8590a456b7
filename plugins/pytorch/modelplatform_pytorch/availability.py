"""Whether torch can be used here, found without importing it (importing torch takes seconds)."""

from __future__ import annotations

import functools
import importlib.util

INSTALL_HINT = "pip install torch==2.13.0"


@functools.cache
def unavailable_reason() -> str | None:
    if importlib.util.find_spec("torch") is None:
        return f"torch is not installed ({INSTALL_HINT})"
    return None
