"""The sequence batcher on a stateful test backend: slots, order, controls, idle, bounds."""

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
    Tensor,
    Unavailable,
)
from modelplatform.base.config_reader import from_proto, parse_json
from modelplatform.base.deadlines import deadline_for
from modelplatform.base.errors import RequestTimedOut
from modelplatform.models.scheduling.sequence import SequenceBatcher
from modelplatform.models.stats import ModelStats

INT32_FLAGS = {"int32_false_true": [0, 1]}


def _config(strategy: str = "direct", max_batch_size: int = 2, idle_us: int = 0, **extra):
    controls = [
        {"name": "START", "control": [{"kind": "CONTROL_SEQUENCE_START", **INT32_FLAGS}]},
        {"name": "READY", "control": [{"kind": "CONTROL_SEQUENCE_READY", **INT32_FLAGS}]},
        {"name": "END", "control": [{"kind": "CONTROL_SEQUENCE_END", "bool_false_true": [False, True]}]},
        {"name": "CORRID", "control": [{"kind": "CONTROL_SEQUENCE_CORRID", "data_type": "TYPE_UINT64"}]},
    ]
    batching = {"control_input": controls, "max_sequence_idle_microseconds": idle_us, strategy: extra}
    return from_proto(
        parse_json(
            {
                "name": "acc",
                "backend": "acc",
                "max_batch_size": max_batch_size,
                "input": [{"name": "INPUT", "data_type": "TYPE_INT32", "dims": [1]}],
                "output": [{"name": "OUTPUT", "data_type": "TYPE_INT32", "dims": [1]}],
                "sequence_batching": batching,
            }
        )
    )


class Accumulator(Backend):
    """Sums INPUT per sequence id, restarting at START; records every batch it saw."""

    kind = "acc"

    def __init__(self, config, version_dir=None, instance_index=0, delay=0.0):
        super().__init__(config, version_dir, instance_index)
        self.sums: dict[int, int] = {}
        self.batches: list[list[tuple[int, int, bool]]] = []  # (corrid, value, ready) per position
        self.delay = delay

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        seen = []
        results: ExecuteResult = []
        for request in batch:
            arrays = request.arrays()
            corrid, ready = int(arrays["CORRID"].item()), bool(arrays["READY"].item())
            value = int(arrays["INPUT"].reshape(-1)[0])
            seen.append((corrid, value, ready))
            if arrays["START"].item():
                self.sums[corrid] = 0
            if ready:
                self.sums[corrid] += value
            total = np.full(arrays["INPUT"].shape, self.sums.get(corrid, 0), dtype=np.int32)
            results.append(InferenceResponse("acc", "1", [Tensor.from_array("OUTPUT", total)]))
        self.batches.append(seen)
        await asyncio.sleep(self.delay)
        return results


def _request(
    sequence_id, value: int, start=False, end=False, batching=True, **parameters
) -> InferenceRequest:
    data = np.array([[value]] if batching else [value], dtype=np.int32)
    parameters = {"sequence_id": sequence_id, "sequence_start": start, "sequence_end": end, **parameters}
    request = InferenceRequest("acc", [Tensor.from_array("INPUT", data)], parameters=parameters)
    request.deadline = deadline_for(parameters, None)  # as the dataplane does before submitting
    return request


def _value(response: InferenceResponse) -> int:
    return int(response.outputs[0].data.reshape(-1)[0])


async def _batcher(config, instances: int = 1, delay: float = 0.0):
    backends = [Accumulator(config, delay=delay) for _ in range(instances)]
    return SequenceBatcher(config, backends, ModelStats("acc", "1")), backends


async def test_each_sequence_accumulates_alone_and_keeps_its_position():
    batcher, (backend,) = await _batcher(_config(), delay=0.01)
    first = await asyncio.gather(
        batcher.submit(_request(11, 1, start=True)), batcher.submit(_request(22, 100, start=True))
    )
    second = await asyncio.gather(
        batcher.submit(_request(11, 2)), batcher.submit(_request(22, 200, end=True))
    )
    third = await batcher.submit(_request(11, 3, end=True))
    await batcher.close()
    assert [_value(r) for r in first] == [1, 100]
    assert [_value(r) for r in second] == [3, 300]
    assert _value(third) == 6
    for seen in backend.batches:  # sequence 11 took slot 0, 22 slot 1: their positions never move
        assert [c for c, _, ready in seen if ready] == [c for c in (11, 22) if c in [s[0] for s in seen]]
    assert backend.batches[-1] == [(11, 3, True)]


async def test_a_free_position_below_a_busy_one_holds_a_filler_that_is_not_ready():
    batcher, (backend,) = await _batcher(_config())
    await asyncio.gather(
        batcher.submit(_request(1, 5, start=True)), batcher.submit(_request(2, 7, start=True))
    )
    await batcher.submit(_request(1, 5, end=True))  # frees slot 0
    response = await batcher.submit(_request(2, 1))
    await batcher.close()
    assert _value(response) == 8
    assert backend.batches[-1] == [(0, 0, False), (2, 1, True)]


async def test_requests_of_one_sequence_run_in_order_one_at_a_time():
    batcher, (backend,) = await _batcher(_config(max_batch_size=4), delay=0.005)
    requests = [_request(9, 1, start=True)] + [_request(9, i) for i in range(2, 11)]
    responses = await asyncio.gather(*(batcher.submit(r) for r in requests))
    await batcher.close()
    assert [_value(r) for r in responses] == [sum(range(1, i + 1)) for i in range(1, 11)]
    assert all(len([s for s in seen if s[2]]) == 1 for seen in backend.batches)


async def test_triton_errors_for_a_request_without_start_or_without_id():
    batcher, _ = await _batcher(_config())
    with pytest.raises(
        InvalidArgument, match="must specify the START flag on the first request of the sequence"
    ):
        await batcher.submit(_request(5, 1))
    with pytest.raises(InvalidArgument, match="must specify a non-zero or non-empty correlation ID"):
        await batcher.submit(_request(0, 1, start=True))
    with pytest.raises(InvalidArgument, match="must specify batch-size 1"):
        request = _request(5, 1, start=True)
        request.inputs[0] = Tensor.from_array("INPUT", np.zeros((2, 1), dtype=np.int32))
        await batcher.submit(request)
    with pytest.raises(InvalidArgument, match="'sequence_id'"):
        await batcher.submit(_request(-3, 1, start=True))
    with pytest.raises(InvalidArgument, match="'sequence_end'"):
        await batcher.submit(_request(5, 1, start=True, sequence_end="yes"))
    await batcher.close()


async def test_a_second_start_restarts_the_sequence_in_its_slot():
    batcher, _ = await _batcher(_config())
    await batcher.submit(_request(3, 10, start=True))
    restarted = await batcher.submit(_request(3, 1, start=True))
    await batcher.close()
    assert _value(restarted) == 1


async def test_string_ids_are_sequences_of_their_own():
    config = _config(max_batch_size=0)
    batcher, _ = await _batcher(config)
    # the CORRID control is UINT64: a string id cannot be written there
    with pytest.raises(InvalidArgument, match="numeric sequence id"):
        await batcher.submit(_request("abc", 1, start=True, batching=False))
    await batcher.close()


async def test_a_new_sequence_waits_for_a_slot_and_takes_it_when_one_ends():
    batcher, _ = await _batcher(_config(max_batch_size=0))
    await batcher.submit(_request(1, 1, start=True, batching=False))
    waiting = asyncio.ensure_future(batcher.submit(_request(2, 5, start=True, batching=False)))
    await asyncio.sleep(0.05)
    assert not waiting.done()  # the only slot is held by sequence 1
    await batcher.submit(_request(1, 1, end=True, batching=False))
    assert _value(await asyncio.wait_for(waiting, 2)) == 5
    await batcher.close()


async def test_waiting_for_a_slot_is_bounded_by_the_request_timeout_and_by_the_server():
    batcher, _ = await _batcher(_config(max_batch_size=0))
    await batcher.submit(_request(1, 1, start=True, batching=False))
    with pytest.raises(RequestTimedOut):
        await batcher.submit(_request(2, 5, start=True, batching=False, timeout=50_000))
    with pytest.raises(InvalidArgument, match="START flag"):  # the timed-out sequence was dropped whole
        await batcher.submit(_request(2, 5, batching=False, timeout=50_000))
    batcher.slot_wait_s = 0.05
    with pytest.raises(Unavailable, match="found no free sequence slot within 0.05 s"):
        await batcher.submit(_request(3, 5, start=True, batching=False))
    await batcher.close()


async def test_an_idle_sequence_ends_and_frees_its_slot():
    batcher, _ = await _batcher(_config(max_batch_size=0, idle_us=100_000))
    await batcher.submit(_request(1, 1, start=True, batching=False))
    second = await asyncio.wait_for(batcher.submit(_request(2, 7, start=True, batching=False)), 2)
    assert _value(second) == 7
    with pytest.raises(InvalidArgument, match="sequence 1 to model 'acc' must specify the START flag"):
        await batcher.submit(_request(1, 1, batching=False))
    await batcher.close()


async def test_oldest_batches_requests_of_different_sequences_only():
    config = _config(strategy="oldest", max_batch_size=4, max_candidate_sequences=4)
    batcher, (backend,) = await _batcher(config, delay=0.01)
    starts = [batcher.submit(_request(s, s, start=True)) for s in (1, 2, 3)]
    more = [batcher.submit(_request(s, 1)) for s in (1, 2, 3) for _ in range(3)]
    responses = await asyncio.gather(*starts, *more)
    await batcher.close()
    assert [_value(r) for r in responses[:3]] == [1, 2, 3]
    for seen in backend.batches:
        ids = [c for c, _, _ in seen]
        assert len(ids) == len(set(ids)) and len(ids) <= 4
    assert max(len(seen) for seen in backend.batches) > 1
    assert sorted(backend.sums.items()) == [(1, 4), (2, 5), (3, 6)]


async def test_sequences_spread_over_instances_and_stay_on_theirs():
    batcher, backends = await _batcher(_config(max_batch_size=0), instances=2)
    for step in range(3):
        await asyncio.gather(
            *(batcher.submit(_request(s, 1, start=step == 0, batching=False)) for s in (1, 2))
        )
    await batcher.close()
    assert [sorted(b.sums) for b in backends] == [[1], [2]]


@pytest.mark.parametrize(
    ("batching", "message"),
    [
        (
            {"state": [{"input_name": "S", "output_name": "S2", "data_type": "TYPE_FP32", "dims": [1]}]},
            "state",
        ),
        ({"iterative_sequence": True}, "iterative_sequence"),
        (
            {"control_input": [{"name": "S", "control": [{"kind": "CONTROL_SEQUENCE_START"}]}]},
            "exactly one of",
        ),
        (
            {
                "control_input": [
                    {"name": "S", "control": [{"kind": "CONTROL_SEQUENCE_START", "int32_false_true": [1]}]}
                ]
            },
            "exactly 2 entries",
        ),
        (
            {
                "control_input": [
                    {"name": "C", "control": [{"kind": "CONTROL_SEQUENCE_CORRID", "data_type": "TYPE_FP32"}]}
                ]
            },
            "CONTROL_SEQUENCE_CORRID\\) must have data_type",
        ),
        (
            {
                "control_input": [
                    {"name": "A", "control": [{"kind": "CONTROL_SEQUENCE_READY", **INT32_FLAGS}]},
                    {"name": "B", "control": [{"kind": "CONTROL_SEQUENCE_READY", **INT32_FLAGS}]},
                ]
            },
            "multiple CONTROL_SEQUENCE_READY tensors",
        ),
        (
            {
                "control_input": [
                    {"name": "A", "control": [{"kind": "CONTROL_SEQUENCE_READY", **INT32_FLAGS}]},
                    {"name": "A", "control": [{"kind": "CONTROL_SEQUENCE_START", **INT32_FLAGS}]},
                ]
            },
            "'A' is specified for multiple control kinds",
        ),
    ],
)
def test_what_the_batcher_cannot_honour_is_refused_by_name(batching, message):
    document = {
        "name": "acc",
        "backend": "acc",
        "input": [{"name": "INPUT", "data_type": "TYPE_INT32", "dims": [1]}],
        "sequence_batching": batching,
    }
    with pytest.raises(InvalidArgument, match=message):
        from_proto(parse_json(document))


def test_a_decoupled_stateful_model_is_refused():
    document = {
        "name": "acc",
        "backend": "acc",
        "sequence_batching": {},
        "model_transaction_policy": {"decoupled": True},
    }
    with pytest.raises(InvalidArgument, match="decoupled"):
        from_proto(parse_json(document))


def test_controls_have_the_configured_datatypes_shapes_and_values():
    from modelplatform.base.model_config import SequenceControl
    from modelplatform.models.scheduling.sequence_controls import SequenceControls

    controls = [
        SequenceControl("START", "S", "FP32", (0.0, 2.5)),
        SequenceControl("END", "E", "BOOL", (False, True)),
        SequenceControl("READY", "R", "INT32", (-1, 7)),
        SequenceControl("CORRID", "C", "INT32"),
    ]
    tensors = {
        t.name: t for t in SequenceControls("m", controls, batching=True).tensors(2**32 + 5, True, False)
    }
    assert {n: (t.datatype, t.shape, t.data.dtype.name) for n, t in tensors.items()} == {
        "S": ("FP32", (1, 1), "float32"),
        "E": ("BOOL", (1, 1), "bool"),
        "R": ("INT32", (1, 1), "int32"),
        "C": ("INT32", (1, 1), "int32"),
    }
    assert [tensors[n].data.item() for n in "SERC"] == [2.5, False, 7, 5]  # CORRID keeps the id's low bits
    filler = {
        t.name: t.data.item()
        for t in SequenceControls("m", controls, batching=False).tensors(9, False, True, ready=False)
    }
    assert filler == {"S": 0.0, "E": True, "R": -1, "C": 0}
    text = [SequenceControl("CORRID", "C", "BYTES")]
    assert SequenceControls("m", text, batching=False).tensors(12, True, False)[0].data.tolist() == [b"12"]
    assert SequenceControls("m", text, batching=False).tensors("abc", True, False)[0].data.tolist() == [
        b"abc"
    ]


async def test_unloading_fails_queued_and_waiting_requests():
    batcher, _ = await _batcher(_config(max_batch_size=0), delay=0.3)
    running = asyncio.ensure_future(batcher.submit(_request(1, 1, start=True, batching=False)))
    await asyncio.sleep(0.05)  # sequence 1 is in the backend now
    queued = asyncio.ensure_future(batcher.submit(_request(1, 2, batching=False)))
    waiting = asyncio.ensure_future(batcher.submit(_request(2, 1, start=True, batching=False)))
    await asyncio.sleep(0.01)
    await batcher.close()
    for future in (queued, waiting):
        with pytest.raises(Unavailable, match="unloading"):
            await future
    running.cancel()


async def test_direct_waits_for_its_minimum_slot_utilization_up_to_the_delay():
    config = _config(max_batch_size=2, max_queue_delay_microseconds=300_000, minimum_slot_utilization=1.0)
    batcher, (backend,) = await _batcher(config)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await batcher.submit(_request(1, 1, start=True))
    alone = loop.time() - started
    started = loop.time()
    await asyncio.gather(batcher.submit(_request(2, 1, start=True)), batcher.submit(_request(1, 1)))
    together = loop.time() - started
    await batcher.close()
    assert alone >= 0.25  # one busy slot of two: under the utilization, so it waited the delay
    assert together < 0.25 and backend.batches[-1] == [(1, 1, True), (2, 1, True)]


async def test_requests_past_the_queue_bound_are_refused(monkeypatch):
    from modelplatform.base.errors import QueueFull
    from modelplatform.models.scheduling import sequence

    monkeypatch.setattr(sequence, "MAX_QUEUED_REQUESTS", 3)
    batcher, _ = await _batcher(_config(max_batch_size=0), delay=0.2)
    first = [asyncio.ensure_future(batcher.submit(_request(1, 1, start=True, batching=False)))]
    await asyncio.sleep(0.05)  # the first runs
    first += [asyncio.ensure_future(batcher.submit(_request(1, 1, batching=False))) for _ in range(3)]
    await asyncio.sleep(0.01)  # three wait in the sequence's queue
    with pytest.raises(QueueFull):
        await batcher.submit(_request(1, 1, batching=False))
    assert [_value(r) for r in await asyncio.gather(*first)] == [1, 2, 3, 4]
    await batcher.close()


async def test_a_control_tensor_declared_as_an_input_is_overridden():
    """As Triton's override inputs: the model sees the batcher's START, not the client's."""
    document = _config().to_json()
    document["input"].append({"name": "START", "data_type": "TYPE_INT32", "dims": [1]})
    config = from_proto(parse_json(document))
    batcher, (backend,) = await _batcher(config)
    request = _request(4, 3, start=True)
    request.inputs.append(Tensor.from_array("START", np.array([[0]], dtype=np.int32)))
    first = await batcher.submit(request)
    await batcher.close()
    assert [t.name for t in request.inputs].count("START") == 1
    assert _value(first) == 3 and backend.sums == {4: 3}


def test_the_config_shows_triton_defaults_for_the_sequence_batcher():
    document = {"name": "acc", "backend": "acc", "max_batch_size": 4, "sequence_batching": {"oldest": {}}}
    config = from_proto(parse_json(document))
    assert config.sequence_batching is not None and config.sequence_batching.max_sequence_idle_us == 1_000_000
    shown = config.to_json()["sequence_batching"]
    assert shown["max_sequence_idle_microseconds"] == 1_000_000
    assert shown["oldest"]["preferred_batch_size"] == [4]


async def test_an_end_that_expired_frees_the_slot_for_a_waiting_sequence_at_once():
    batcher, _ = await _batcher(_config(max_batch_size=0), delay=0.2)
    first = asyncio.ensure_future(batcher.submit(_request(1, 1, start=True, batching=False)))
    await asyncio.sleep(0.05)  # sequence 1 runs
    end = asyncio.ensure_future(batcher.submit(_request(1, 1, end=True, batching=False, timeout=20_000)))
    waiting = asyncio.ensure_future(batcher.submit(_request(2, 6, start=True, batching=False)))
    with pytest.raises(RequestTimedOut):
        await end  # expired in the queue: sequence 1's END never runs
    await first
    assert _value(await asyncio.wait_for(waiting, 2)) == 6  # the slot was freed, and its worker woke
    await batcher.close()
