"""A generator model: one response per step, INDEX = 1..COUNT."""

import time

import numpy as np

from modelplatform import InvalidArgument

MAX_COUNT = 1000
STEP_SECONDS = 0.01


def _count(value):
    """A client mistake is InvalidArgument (400), not a model failure (500)."""
    try:
        count = int(value)
    except ValueError:
        raise InvalidArgument(f"COUNT must be a decimal integer, got {value!r}") from None
    if not 0 <= count <= MAX_COUNT:
        raise InvalidArgument(f"COUNT must be 0..{MAX_COUNT}, got {count}")
    return count


class Model:
    def infer(self, inputs):
        for index in range(1, _count(inputs["COUNT"].reshape(-1)[0]) + 1):
            time.sleep(STEP_SECONDS)
            yield {"INDEX": np.array([index], dtype=np.int32)}

    def http(self, body, headers):
        """Raw route: the body is a decimal count; streams one line per step."""
        for index in range(1, _count(body.decode() or "0") + 1):
            time.sleep(STEP_SECONDS)
            yield f"{index}\n"
