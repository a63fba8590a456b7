"""The batching sub-API: when requests join, how their inputs join and their outputs split."""

from __future__ import annotations

import numpy as np
import pytest

from modelplatform import InferenceRequest, Internal, RequestedOutput, Tensor
from modelplatform.batching import join_inputs, joinable, rows, split_outputs


def _request(*arrays: tuple[str, np.ndarray], outputs: list[str] | None = None) -> InferenceRequest:
    requested = None if outputs is None else [RequestedOutput(name) for name in outputs]
    return InferenceRequest(
        "m", [Tensor.from_array(name, array) for name, array in arrays], outputs=requested
    )


def _rows(count: int, start: float = 0.0, width: int = 3) -> np.ndarray:
    return np.arange(start, start + count * width, dtype=np.float32).reshape(count, width)


# ---- rows ----


def test_rows_is_the_first_inputs_first_dimension():
    assert rows(_request(("A", _rows(4)), ("B", _rows(1)))) == 4


def test_rows_is_one_without_inputs_or_without_a_dimension():
    assert rows(_request()) == 1
    assert rows(_request(("A", np.zeros((), np.float32)))) == 1


# ---- joinable ----


def test_two_requests_with_the_same_inputs_that_fit_are_joinable():
    batch = [_request(("A", _rows(2)), ("B", _rows(2))), _request(("A", _rows(1)), ("B", _rows(1)))]
    assert joinable(batch, 3)


def test_input_order_does_not_matter():
    batch = [_request(("A", _rows(1)), ("B", _rows(1))), _request(("B", _rows(1)), ("A", _rows(1)))]
    assert joinable(batch, 8)


def test_more_rows_than_max_batch_size_are_not_joinable():
    batch = [_request(("A", _rows(2))), _request(("A", _rows(2)))]
    assert joinable(batch, 4)
    assert not joinable(batch, 3)


def test_one_request_or_a_model_without_batching_is_not_joinable():
    assert not joinable([_request(("A", _rows(1)))], 8)
    assert not joinable([_request(("A", _rows(1))), _request(("A", _rows(1)))], 0)
    assert not joinable([], 8)


def test_a_different_per_item_shape_datatype_or_name_is_not_joinable():
    first = _request(("A", _rows(1, width=3)))
    assert not joinable([first, _request(("A", _rows(1, width=4)))], 8)
    assert not joinable([first, _request(("A", _rows(1).astype(np.int32)))], 8)
    assert not joinable([first, _request(("X", _rows(1)))], 8)
    assert not joinable([first, _request(("A", _rows(1)), ("B", _rows(1)))], 8)


def test_different_requested_outputs_join_only_when_outputs_need_not_match():
    one, other = _request(("A", _rows(1)), outputs=["Y"]), _request(("A", _rows(1)), outputs=["Z"])
    every = _request(("A", _rows(1)))  # None: every output, a choice of its own
    assert not joinable([one, other], 8)
    assert not joinable([one, every], 8)
    assert joinable([one, other], 8, same_outputs=False)
    assert joinable([one, every], 8, same_outputs=False)
    assert joinable([one, _request(("A", _rows(1)), outputs=["Y"])], 8)


# ---- join_inputs ----


def test_inputs_are_concatenated_along_the_batch_axis_by_name_in_the_first_requests_order():
    first = _request(("A", _rows(2)), ("B", _rows(2, start=100)))
    second = _request(("B", _rows(1, start=200)), ("A", _rows(1, start=10)))
    joined = join_inputs([first, second])
    assert list(joined) == ["A", "B"]
    np.testing.assert_array_equal(joined["A"], np.concatenate([_rows(2), _rows(1, start=10)]))
    np.testing.assert_array_equal(joined["B"], np.concatenate([_rows(2, start=100), _rows(1, start=200)]))


def test_a_request_lacking_an_input_is_an_internal_error_naming_it():
    with pytest.raises(Internal, match="'B'"):
        join_inputs([_request(("A", _rows(1)), ("B", _rows(1))), _request(("A", _rows(1)))])


# ---- split_outputs ----


def test_outputs_are_cut_into_per_request_views():
    outputs = {"Y": _rows(5), "Z": np.arange(5, dtype=np.int64)}
    shares = split_outputs(outputs, [2, 1, 2])
    assert len(shares) == 3
    np.testing.assert_array_equal(shares[0]["Y"], _rows(5)[:2])
    np.testing.assert_array_equal(shares[1]["Z"], [2])
    np.testing.assert_array_equal(shares[2]["Z"], [3, 4])
    assert all(np.shares_memory(share[name], outputs[name]) for share in shares for name in outputs)


def test_no_outputs_split_into_empty_shares():
    assert split_outputs({}, [1, 2]) == [{}, {}]


@pytest.mark.parametrize("array", [_rows(4), np.zeros((), np.float32)], ids=["rows", "scalar"])
def test_an_output_without_the_batchs_rows_is_an_internal_error_naming_it(array):
    with pytest.raises(Internal, match=r"output 'Y' has shape \[[0-9, ]*\], expected batch 3"):
        split_outputs({"X": _rows(3), "Y": array}, [2, 1])
