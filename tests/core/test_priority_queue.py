"""Priority levels and queue policies in the dynamic batcher (Triton's schedule_policy extension).

A recording backend with one instance and ``max_batch_size`` 1 runs one
request at a time, so the order it sees is the order the queue serves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from modelplatform import (
    Backend,
    ExecuteResult,
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    QueueFull,
    Tensor,
    Unavailable,
)
from modelplatform.base.config_reader import from_proto, parse_json
from modelplatform.base.deadlines import deadline_for
from modelplatform.models.scheduling.dynamic import DynamicBatcher
from modelplatform.models.stats import ModelStats


def _config(**batching):
    return from_proto(
        parse_json(
            {
                "name": "rec",
                "backend": "rec",
                "max_batch_size": 1,
                "input": [{"name": "A", "data_type": "TYPE_FP32", "dims": [1]}],
                "output": [{"name": "B", "data_type": "TYPE_FP32", "dims": [1]}],
                "dynamic_batching": batching,
            }
        )
    )


class Recorder(Backend):
    kind = "rec"

    def __init__(self, config, delay: float = 0.05):
        super().__init__(config, None, 0)
        self.seen: list[float] = []
        self.delay = delay

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        self.seen += [float(r.inputs[0].data[0, 0]) for r in batch]
        await asyncio.sleep(self.delay)
        return [InferenceResponse("rec", "1", [Tensor.from_array("B", r.inputs[0].data)]) for r in batch]


def _request(config, value: float, **parameters) -> InferenceRequest:
    request = InferenceRequest(
        "rec", [Tensor.from_array("A", np.full((1, 1), value, np.float32))], parameters=parameters
    )
    request.deadline = deadline_for(parameters, config.dynamic_batching)  # as the dataplane does
    return request


async def _run(config, *specs: dict, delay: float = 0.05) -> tuple[list[float], list]:
    backend = Recorder(config, delay)
    batcher = DynamicBatcher(config, [backend], ModelStats("rec", "1"))
    futures = [asyncio.ensure_future(batcher.submit(_request(config, 0.0)))]
    await asyncio.sleep(0.01)  # the instance is busy with request 0: the others queue
    for spec in specs:
        futures.append(asyncio.ensure_future(batcher.submit(_request(config, **spec))))
        await asyncio.sleep(0)
    results = await asyncio.gather(*futures, return_exceptions=True)
    await batcher.close()
    return backend.seen, results


async def test_higher_priority_is_served_first():
    config = _config(priority_levels=3, default_priority_level=2)
    seen, _ = await _run(
        config,
        {"value": 1.0, "priority": 3},
        {"value": 2.0},  # the default level, 2
        {"value": 3.0, "priority": 1},
        {"value": 4.0, "priority": 9},  # past the last level: the default one
        {"value": 5.0, "priority": 1},
    )
    assert seen == [0.0, 3.0, 5.0, 2.0, 4.0, 1.0]


async def test_without_levels_priority_is_accepted_and_order_is_arrival():
    config = _config()
    seen, _ = await _run(config, {"value": 1.0, "priority": 2}, {"value": 2.0, "priority": 1})
    assert seen == [0.0, 1.0, 2.0]


async def test_each_level_has_its_own_max_queue_size():
    config = _config(
        priority_levels=2,
        default_priority_level=2,
        priority_queue_policy={"1": {"max_queue_size": 1}},
    )
    seen, results = await _run(
        config, {"value": 1.0, "priority": 1}, {"value": 2.0, "priority": 1}, {"value": 3.0}, {"value": 4.0}
    )
    assert isinstance(results[2], QueueFull)  # level 1 holds one request
    assert seen == [0.0, 1.0, 3.0, 4.0]  # level 2 still has the default bound


async def test_reject_fails_past_the_default_timeout_and_override_only_shortens_it():
    policy = {"default_timeout_microseconds": 30_000, "allow_timeout_override": True}
    config = _config(default_queue_policy=policy)
    seen, results = await _run(config, {"value": 1.0}, {"value": 2.0, "timeout": 10_000_000}, delay=0.1)
    assert isinstance(results[1], Unavailable) and "Request timeout expired" in str(results[1])
    assert isinstance(results[2], Unavailable)  # a longer client timeout does not lengthen it
    assert seen == [0.0]


async def test_client_timeout_is_ignored_without_allow_timeout_override():
    config = _config(
        default_queue_policy={"default_timeout_microseconds": 0, "allow_timeout_override": False}
    )
    seen, results = await _run(config, {"value": 1.0, "timeout": 1000}, delay=0.05)
    assert not any(isinstance(r, Exception) for r in results)
    assert seen == [0.0, 1.0]


async def test_client_timeout_is_ignored_when_the_level_has_no_default_timeout():
    config = _config(default_queue_policy={"allow_timeout_override": True})
    seen, results = await _run(config, {"value": 1.0, "timeout": 1000}, delay=0.05)
    assert not any(isinstance(r, Exception) for r in results) and seen == [0.0, 1.0]


async def test_override_shortens_the_default_timeout():
    policy = {"default_timeout_microseconds": 10_000_000, "allow_timeout_override": True}
    config = _config(default_queue_policy=policy)
    seen, results = await _run(config, {"value": 1.0, "timeout": 20_000}, {"value": 2.0}, delay=0.1)
    assert isinstance(results[1], Unavailable)
    assert seen == [0.0, 2.0]


async def test_delay_moves_a_request_behind_its_level_but_not_behind_lower_levels():
    config = _config(
        priority_levels=2,
        default_priority_level=2,
        priority_queue_policy={
            "1": {
                "timeout_action": "DELAY",
                "default_timeout_microseconds": 500_000,
                "allow_timeout_override": True,
            }
        },
    )
    seen, results = await _run(
        config,
        {"value": 1.0, "priority": 1, "timeout": 5_000},  # delayed after 5 ms: behind 2.0
        {"value": 2.0, "priority": 1},  # its 500 ms have not passed when the instance frees
        {"value": 3.0, "priority": 2},
        delay=0.1,
    )
    assert not any(isinstance(r, Exception) for r in results)  # DELAY never fails a request
    assert seen == [0.0, 2.0, 1.0, 3.0]


async def test_bad_priority_is_refused():
    config = _config(priority_levels=2, default_priority_level=1)
    for bad in (-1, "high", True):
        with pytest.raises(InvalidArgument, match="priority"):
            deadline_for({"priority": bad}, config.dynamic_batching)


@pytest.mark.parametrize(
    ("batching", "message"),
    [
        ({"priority_levels": 2}, "default_priority_level must be in range \\[1, 2\\]"),
        ({"priority_levels": 2, "default_priority_level": 3}, "default_priority_level"),
        ({"default_priority_level": 1}, "default_priority_level needs priority_levels"),
        ({"priority_levels": 1, "default_priority_level": 1, "priority_queue_policy": {"2": {}}}, "level 2"),
        ({"priority_queue_policy": {"1": {}}}, "priority_queue_policy level 1"),
    ],
)
def test_inconsistent_priority_config_is_refused(batching, message):
    with pytest.raises(InvalidArgument, match=message):
        _config(**batching)


def test_policies_are_read_as_written():
    config = _config(
        priority_levels=2,
        default_priority_level=2,
        default_queue_policy={
            "timeout_action": "DELAY",
            "default_timeout_microseconds": 7,
            "max_queue_size": 3,
        },
        priority_queue_policy={"1": {"allow_timeout_override": True}},
    )
    batching = config.dynamic_batching
    assert batching is not None
    default = batching.policy_for(2)
    assert (default.timeout_action, default.default_timeout_us, default.max_queue_size) == ("DELAY", 7, 3)
    assert default.allow_timeout_override is False  # Triton's default: the config says nothing
    assert batching.policy_for(1).allow_timeout_override is True
    assert batching.levels() == (1, 2) and batching.level_of(0) == 2 and batching.level_of(1) == 1


def test_bad_priority_is_refused_for_a_model_without_dynamic_batching_too():
    with pytest.raises(InvalidArgument, match="priority"):
        deadline_for({"priority": "urgent"}, None)
    assert deadline_for({"priority": 3}, None) is None  # accepted, and changes nothing there
