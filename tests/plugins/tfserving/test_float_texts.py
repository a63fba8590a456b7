"""A few floats are written value by value; the texts equal the vectorised path's."""

from __future__ import annotations

import numpy as np
import pytest

from modelplatform_tfserving.json_out import SMALL_FLOATS, float_texts

EDGES = {
    np.float32: [0.1, 3.4028235e38, -0.0, 1e-45, 1 / 3, 16777217.0, 3.5],
    np.float64: [0.1, 1.7976931348623157e308, -0.0, 5e-324, 1 / 3, 2.0**53 + 1, 3.5],
    np.float16: [0.1, 65504.0, -0.0, 6e-8, 1 / 3, 2049.0, 3.5],
}


@pytest.mark.parametrize("dtype", list(EDGES), ids=lambda d: d.__name__)
def test_few_floats_read_as_the_vectorised_path_writes_them(dtype):
    rng = np.random.default_rng(32)
    for _ in range(200):
        scale = 10.0 ** rng.integers(-6, 6, SMALL_FLOATS)
        values = (rng.standard_normal(SMALL_FLOATS) * scale).astype(dtype)
        values[: len(EDGES[dtype])] = EDGES[dtype]
        values[-3:] = [np.nan, np.inf, -np.inf]
        few = float_texts(values)
        vectorised = float_texts(np.concatenate([values, values]))[:SMALL_FLOATS]  # past SMALL_FLOATS
        assert few == vectorised


def test_three_float32_as_tf_serving_writes_them():
    assert float_texts(np.array([3.5, 4.0, 0.1], np.float32)) == ["3.5", "4.0", "0.1"]
    assert float_texts(np.array([16777217.0], np.float64)) == ["16777217.0"]
