"""B5 row-format output rules and the B2 status table, on the encoder and the table themselves.

These outputs cannot come from a well-behaved model through the real server
(every bundled and test model keeps its batch), so the rules are checked on
the functions the server calls.
"""

from __future__ import annotations

import numpy as np
import pytest

from modelplatform import ErrorCode, InvalidArgument, ModelPlatformError
from modelplatform_tfserving.errors import http_status
from modelplatform_tfserving.rest.predict_json import ROW, encode_outputs


def test_rows_need_one_batch_size_for_every_output():
    outputs = {"a": np.zeros((2, 1), np.float32), "b": np.zeros((3, 1), np.float32)}
    with pytest.raises(InvalidArgument, match="Tensor name: b has inconsistent batch size: 3 expecting: 2"):
        encode_outputs(outputs, ROW)


def test_rows_need_a_batch_dimension():
    with pytest.raises(InvalidArgument, match="Tensor name: a has no shape information"):
        encode_outputs({"a": np.float32(1.0), "b": np.zeros(1, np.float32)}, ROW)


def test_zero_batch_is_an_empty_prediction_list():
    assert (
        encode_outputs({"a": np.zeros((0, 2), np.float32)}, ROW).replace(" ", "").replace("\n", "")
        == '{"predictions":[]}'
    )


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (ErrorCode.INVALID_ARGUMENT, 400),
        (ErrorCode.NOT_FOUND, 404),
        (ErrorCode.ALREADY_EXISTS, 409),
        (ErrorCode.RESOURCE_EXHAUSTED, 429),
        (ErrorCode.CANCELLED, 499),
        (ErrorCode.INTERNAL, 500),
        (ErrorCode.UNSUPPORTED, 501),
        (ErrorCode.UNAVAILABLE, 503),
        (ErrorCode.DEADLINE_EXCEEDED, 504),
        (ErrorCode.PERMISSION_DENIED, 403),
    ],
)
def test_status_table_is_tf_servings(code, status):
    error = ModelPlatformError("x")
    error.code = code
    assert http_status(error) == status
