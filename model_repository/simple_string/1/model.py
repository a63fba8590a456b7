"""Decimal text of the sum and difference of two text-integer tensors."""

import numpy as np

from modelplatform import InvalidArgument


def _integers(name, array):
    try:
        values = [int(x) for x in array.flat]
        return np.array(values, dtype=np.int64).reshape(array.shape)
    except (ValueError, OverflowError):
        raise InvalidArgument(
            f"model 'simple_string', input '{name}': expected 64-bit decimal integers as text"
        ) from None


def _text(array):
    out = np.empty(array.shape, dtype=object)
    out.flat[:] = [str(int(x)).encode() for x in array.flat]
    return out


class Model:
    def infer(self, inputs):
        a = _integers("INPUT0", inputs["INPUT0"])
        b = _integers("INPUT1", inputs["INPUT1"])
        return {"OUTPUT0": _text(a + b), "OUTPUT1": _text(a - b)}
