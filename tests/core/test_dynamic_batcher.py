"""The dynamic batcher on a recording test backend: coalescing, isolation, bounds."""

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


def _config(delay_us: int = 20_000, max_queue: int = 0, preferred=()):
    return from_proto(
        parse_json(
            {
                "name": "rec",
                "backend": "rec",
                "max_batch_size": 8,
                "input": [{"name": "A", "data_type": "TYPE_FP32", "dims": [-1]}],
                "output": [{"name": "B", "data_type": "TYPE_FP32", "dims": [-1]}],
                "dynamic_batching": {
                    "max_queue_delay_microseconds": delay_us,
                    "preferred_batch_size": list(preferred),
                    "default_queue_policy": {"max_queue_size": max_queue},
                },
            }
        )
    )


class Recorder(Backend):
    kind = "rec"

    def __init__(self, config, version_dir=None, instance_index=0, delay=0.0):
        super().__init__(config, version_dir, instance_index)
        self.batches: list[list[int]] = []
        self.delay = delay

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        self.batches.append([r.inputs[0].shape[0] for r in batch])
        await asyncio.sleep(self.delay)
        results: ExecuteResult = []
        for request in batch:
            data = request.inputs[0].data
            if (data < 0).any():
                results.append(InvalidArgument("negative"))
            else:
                results.append(InferenceResponse("rec", "1", [Tensor.from_array("B", data + 1)]))
        return results


def _request(rows: int, value: float, width: int = 2, **parameters) -> InferenceRequest:
    data = np.full((rows, width), value, dtype=np.float32)
    request = InferenceRequest("rec", [Tensor.from_array("A", data)], parameters=parameters)
    request.deadline = deadline_for(parameters, None)  # as the dataplane does before submitting
    return request


async def test_concurrent_requests_coalesce_and_get_their_own_answers():
    config = _config()
    backend = Recorder(config)
    batcher = DynamicBatcher(config, [backend], ModelStats("rec", "1"))
    responses = await asyncio.gather(*(batcher.submit(_request(1, float(i))) for i in range(16)))
    await batcher.close()
    assert [r.outputs[0].data[0, 0] for r in responses] == [i + 1.0 for i in range(16)]
    assert all(sum(rows) <= 8 for rows in backend.batches)
    assert len(backend.batches) <= 4  # 16 requests of 1 row, at most 8 rows a batch, plus stragglers


async def test_a_bad_request_fails_alone():
    config = _config()
    batcher = DynamicBatcher(config, [Recorder(config)], ModelStats("rec", "1"))
    results = await asyncio.gather(
        batcher.submit(_request(1, 1.0)),
        batcher.submit(_request(1, -1.0)),
        batcher.submit(_request(1, 2.0)),
        return_exceptions=True,
    )
    await batcher.close()
    assert isinstance(results[1], InvalidArgument)
    assert results[0].outputs[0].data[0, 0] == 2.0 and results[2].outputs[0].data[0, 0] == 3.0


async def test_shapes_are_never_mixed_and_rows_never_exceed_the_maximum():
    config = _config()
    backend = Recorder(config)
    batcher = DynamicBatcher(config, [backend], ModelStats("rec", "1"))
    requests = [
        _request(3, 1.0),
        _request(3, 1.0, width=5),
        _request(3, 1.0),
        _request(3, 1.0),
        _request(1, 1.0, width=5),
    ]
    responses = await asyncio.gather(*(batcher.submit(r) for r in requests))
    await batcher.close()
    for request, response in zip(requests, responses):
        assert response.outputs[0].data.shape == request.inputs[0].shape
    assert all(sum(rows) <= 8 for rows in backend.batches)


async def test_preferred_size_dispatches_without_waiting_the_full_delay():
    config = _config(delay_us=5_000_000, preferred=(2,))
    batcher = DynamicBatcher(config, [Recorder(config)], ModelStats("rec", "1"))
    await asyncio.wait_for(
        asyncio.gather(batcher.submit(_request(1, 1.0)), batcher.submit(_request(1, 1.0))), 2
    )
    await batcher.close()


async def test_full_queue_is_unavailable():
    config = _config(delay_us=0, max_queue=2)
    backend = Recorder(config, delay=0.2)
    batcher = DynamicBatcher(config, [backend], ModelStats("rec", "1"))
    first = asyncio.ensure_future(batcher.submit(_request(8, 1.0)))
    await asyncio.sleep(0.05)  # the worker is now busy with the first batch
    queued = [asyncio.ensure_future(batcher.submit(_request(8, 1.0))) for _ in range(2)]
    await asyncio.sleep(0)
    with pytest.raises(QueueFull):
        await batcher.submit(_request(8, 1.0))
    await asyncio.gather(first, *queued)
    await batcher.close()


async def test_request_timeout_expires_in_the_queue():
    config = _config(delay_us=0)
    backend = Recorder(config, delay=0.2)
    batcher = DynamicBatcher(config, [backend], ModelStats("rec", "1"))
    busy = asyncio.ensure_future(batcher.submit(_request(8, 1.0)))
    await asyncio.sleep(0.05)
    with pytest.raises(Unavailable, match="timeout"):
        await batcher.submit(_request(8, 1.0, timeout=1000))
    await busy
    await batcher.close()


async def test_cancelled_requests_are_not_executed():
    config = _config(delay_us=0)
    backend = Recorder(config, delay=0.1)
    batcher = DynamicBatcher(config, [backend], ModelStats("rec", "1"))
    busy = asyncio.ensure_future(batcher.submit(_request(8, 1.0)))
    await asyncio.sleep(0.02)
    gone = asyncio.ensure_future(batcher.submit(_request(8, 5.0)))
    await asyncio.sleep(0.01)
    gone.cancel()
    await busy
    await asyncio.sleep(0.15)
    await batcher.close()
    assert backend.batches == [[8]]


async def test_stats_count_queue_and_batches():
    config = _config(delay_us=10_000)
    stats = ModelStats("rec", "1")
    batcher = DynamicBatcher(config, [Recorder(config)], stats)
    await asyncio.gather(*(batcher.submit(_request(1, 1.0)) for _ in range(4)))
    await batcher.close()
    data = stats.to_json()
    assert data["inference_stats"]["queue"]["count"] == 4
    assert sum(b["batch_size"] * b["compute_infer"]["count"] for b in data["batch_stats"]) == 4
