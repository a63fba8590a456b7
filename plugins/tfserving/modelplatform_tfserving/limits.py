"""Client-controlled sizes and their bounds: the core's Limits plus TF Serving's nesting depth."""

from __future__ import annotations

from modelplatform import Limits

#: Deepest tensor nesting accepted (numpy's own limit is 64 dimensions).
MAX_RANK = 32

__all__ = ["MAX_RANK", "Limits"]
