"""RequestRules (the dataplane's prepared checks) answers exactly as validate_request does."""

from __future__ import annotations

import numpy as np
import pytest

from modelplatform import InferenceRequest, ModelPlatformError, RequestedOutput, Tensor
from modelplatform.base.model_config import ModelConfig, TensorSpec
from modelplatform.base.validation import MAX_FITTING_LAYOUTS, RequestRules, validate_request

PLAIN = ModelConfig(
    name="plain",
    inputs=(
        TensorSpec("A", "INT32", (1, 4)),
        TensorSpec("B", "FP32", (-1,)),
        TensorSpec("C", "FP32", (2,), optional=True),
    ),
    outputs=(TensorSpec("Y", "INT32", (1, 4)),),
)
BATCHED = ModelConfig(
    name="batched",
    max_batch_size=4,
    inputs=(TensorSpec("A", "INT32", (4,)), TensorSpec("B", "FP32", (-1,))),
    outputs=(TensorSpec("Y", "INT32", (4,)),),
)
NO_OUTPUTS_DECLARED = ModelConfig(name="open", inputs=(TensorSpec("A", "INT32", (-1,)),))


def tensor(name: str, datatype: str, shape: tuple[int, ...], size: int | None = None) -> Tensor:
    dtype = np.int32 if datatype == "INT32" else np.float32
    count = int(np.prod(shape)) if size is None else size
    return Tensor(name, datatype, shape, np.zeros(count, dtype))


def request(*inputs: Tensor, outputs: tuple[str, ...] | None = None) -> InferenceRequest:
    wanted = None if outputs is None else [RequestedOutput(name) for name in outputs]
    return InferenceRequest("m", list(inputs), outputs=wanted)


CASES = {
    "fits": (PLAIN, request(tensor("A", "INT32", (1, 4)), tensor("B", "FP32", (3,)))),
    "fits with the optional input and outputs named": (
        PLAIN,
        request(
            tensor("A", "INT32", (1, 4)), tensor("B", "FP32", (0,)), tensor("C", "FP32", (2,)), outputs=("Y",)
        ),
    ),
    "unknown input": (
        PLAIN,
        request(tensor("A", "INT32", (1, 4)), tensor("B", "FP32", (3,)), tensor("Z", "FP32", (1,))),
    ),
    "input given twice": (
        PLAIN,
        request(tensor("A", "INT32", (1, 4)), tensor("A", "INT32", (1, 4)), tensor("B", "FP32", (3,))),
    ),
    "wrong datatype": (PLAIN, request(tensor("A", "FP32", (1, 4)), tensor("B", "FP32", (3,)))),
    "wrong rank": (PLAIN, request(tensor("A", "INT32", (4,)), tensor("B", "FP32", (3,)))),
    "wrong dimension": (PLAIN, request(tensor("A", "INT32", (1, 5)), tensor("B", "FP32", (3,)))),
    "data of another size than its shape": (
        PLAIN,
        request(tensor("A", "INT32", (1, 4), size=3), tensor("B", "FP32", (3,))),
    ),
    "required input missing": (PLAIN, request(tensor("A", "INT32", (1, 4)))),
    "unknown output": (
        PLAIN,
        request(tensor("A", "INT32", (1, 4)), tensor("B", "FP32", (3,)), outputs=("Y", "Q")),
    ),
    "batch fits": (BATCHED, request(tensor("A", "INT32", (3, 4)), tensor("B", "FP32", (3, 7)))),
    "batch over the maximum": (BATCHED, request(tensor("A", "INT32", (5, 4)), tensor("B", "FP32", (5, 7)))),
    "batch of zero": (BATCHED, request(tensor("A", "INT32", (0, 4)), tensor("B", "FP32", (0, 7)))),
    "inputs of different batch sizes": (
        BATCHED,
        request(tensor("A", "INT32", (2, 4)), tensor("B", "FP32", (3, 7))),
    ),
    "any output when none is declared": (
        NO_OUTPUTS_DECLARED,
        request(tensor("A", "INT32", (2,)), outputs=("anything",)),
    ),
}


def outcome(check, config: ModelConfig, inference: InferenceRequest) -> tuple[str, str] | None:
    try:
        check(inference, config)
    except ModelPlatformError as error:
        return type(error).__name__, error.message
    return None


@pytest.mark.parametrize("case", CASES)
def test_rules_answer_as_validate_request(case: str) -> None:
    config, inference = CASES[case]
    expected = outcome(validate_request, config, inference)
    got = outcome(lambda r, c: RequestRules(c).check(r), config, inference)
    assert got == expected
    fits = case.startswith(("fits", "batch fits", "any output"))
    assert (expected is None) == fits, expected  # the table means what its names say


def with_layout(inference: InferenceRequest, layout: object) -> InferenceRequest:
    inference.layout = layout
    return inference


def test_a_layout_that_fitted_is_not_checked_again() -> None:
    rules, layout = RequestRules(PLAIN), object()
    rules.check(with_layout(request(tensor("A", "INT32", (1, 4)), tensor("B", "FP32", (3,))), layout))
    # The layout promises what the first request showed; this one breaks the promise on
    # purpose, to show that its checks are skipped (a codec's template never does).
    rules.check(with_layout(request(tensor("A", "FP32", (9,))), layout))
    with pytest.raises(ModelPlatformError, match="datatype INT32"):
        rules.check(with_layout(request(tensor("A", "FP32", (9,))), object()))  # another layout
    with pytest.raises(ModelPlatformError, match="datatype INT32"):
        rules.check(request(tensor("A", "FP32", (9,))))  # no layout: checked every time


def test_a_layout_that_failed_is_checked_every_time() -> None:
    rules, layout = RequestRules(PLAIN), object()
    for _ in range(2):
        with pytest.raises(ModelPlatformError, match="missing required input"):
            rules.check(with_layout(request(tensor("A", "INT32", (1, 4))), layout))


def test_remembered_layouts_are_bounded() -> None:
    rules, first = RequestRules(PLAIN), object()
    fitting = lambda layout: with_layout(  # noqa: E731 - a one-line helper, local to this test
        request(tensor("A", "INT32", (1, 4)), tensor("B", "FP32", (3,))), layout
    )
    rules.check(fitting(first))
    for _ in range(MAX_FITTING_LAYOUTS):
        rules.check(fitting(object()))
    # The set started over when full: the first layout is checked again, and so refused now.
    with pytest.raises(ModelPlatformError, match="datatype INT32"):
        rules.check(with_layout(request(tensor("A", "FP32", (9,))), first))
