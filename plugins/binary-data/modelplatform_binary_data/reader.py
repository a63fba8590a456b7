"""Hands each binary input its slice of the request body, in input order.

Slices are memoryviews of the body, and fixed-size inputs become numpy views
over them: the body is never copied.
"""

from __future__ import annotations

import numpy as np

from modelplatform import InvalidArgument, Limits
from modelplatform.datatypes import element_count
from modelplatform_oip.api import raw_array


class BodyReader:
    def __init__(self, body: bytes | bytearray, start: int) -> None:
        self.view = memoryview(body)
        self.offset = start

    def read(self, name: str, datatype: str, shape: list[int], size: int, limits: Limits) -> np.ndarray:
        """The ``parse_request`` callback for an input with ``binary_data_size``."""
        count = element_count(shape, limits.max_tensor_elements, name)
        left = len(self.view) - self.offset
        if size > left:
            raise InvalidArgument(
                f"input '{name}': binary_data_size {size} is past the end of the body ({left} bytes left)"
            )
        chunk = self.view[self.offset : self.offset + size]
        self.offset += size
        return raw_array(name, datatype, count, chunk, limits).reshape(shape)

    def finish(self) -> None:
        """Refuse bytes that no input claimed (a client and server disagreeing on sizes)."""
        left = len(self.view) - self.offset
        if left:
            raise InvalidArgument(f"the body has {left} bytes after the last binary input")
