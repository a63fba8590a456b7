"""``pb_utils.TritonModelException``, in its own module: the utilities' modules all raise it."""

from __future__ import annotations


class TritonModelException(Exception):
    """Raised by the utilities; a model may raise it too."""
