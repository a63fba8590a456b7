"""DLPack capsules of host arrays for ``pb_utils.Tensor.to_dlpack`` / ``__dlpack__``, no copy.

(Device tensors, ``from_dlpack`` and which memory a tensor lives in are device.py's
and triton_utils.py's.)
"""

from __future__ import annotations

from typing import Any

import numpy as np


def capsule_of(array: np.ndarray, **kwargs: Any) -> Any:
    """A DLPack capsule of ``array``'s memory, no copy.

    The plain (pre-1.0) capsule every consumer reads; for a read-only array
    (a request's inputs are views of the received bytes) DLPack 1.0's, which
    can say read-only where the old one cannot.
    """
    try:
        return array.__dlpack__(**kwargs)
    except BufferError:
        if array.flags.writeable or kwargs:
            raise
        return array.__dlpack__(max_version=(1, 0))
