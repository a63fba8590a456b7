"""Whether TensorFlow can be imported here, found without importing it (that takes seconds)."""

from __future__ import annotations

import functools
import importlib.util


@functools.cache
def unavailable_reason() -> str | None:
    if importlib.util.find_spec("tensorflow") is None:
        return "tensorflow is not installed (pip install tensorflow)"
    return None
