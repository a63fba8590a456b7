"""A backend's stream may be any async iterator (the contract's type), not only a generator.

The dataplane closes a stream whose consumer stops early; one without ``aclose``
(a class with ``__anext__``) has nothing to close and must still answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np

from modelplatform import (
    Backend,
    ExecuteResult,
    InferenceRequest,
    InferenceResponse,
    Settings,
    Tensor,
    hookimpl,
)
from modelplatform.testing import InProcessServer, free_port

CONFIG = """
name: "countdown"
backend: "countdown"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "I" data_type: TYPE_INT32 dims: [ 1 ] } ]
"""


class Countdown:
    """I = N..1 as a plain async iterator: it has ``__anext__`` and no ``aclose``."""

    def __init__(self, request: InferenceRequest) -> None:
        self._request = request
        self._left = int(request.inputs[0].data[0])

    def __aiter__(self) -> Countdown:
        return self

    async def __anext__(self) -> InferenceResponse:
        if self._left == 0:
            raise StopAsyncIteration
        value, self._left = self._left, self._left - 1
        output = Tensor.from_array("I", np.array([value], np.int32))
        return InferenceResponse(self._request.model_name, "", [output])


class CountdownBackend(Backend):
    kind: ClassVar[str] = "countdown"

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        return [InferenceResponse(r.model_name, "", []) for r in batch]

    def stream(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        return Countdown(request)


class CountdownPlugin:
    @staticmethod
    @hookimpl
    def register_backends(settings: Settings) -> list[type[Backend]]:
        return [CountdownBackend]


def _settings(tmp_path: Path) -> Settings:
    (tmp_path / "countdown" / "1").mkdir(parents=True)
    (tmp_path / "countdown" / "config.pbtxt").write_text(CONFIG)
    return Settings(model_repository=tmp_path, host="127.0.0.1", http_port=free_port(), grpc_port=free_port())


def _request(n: int) -> InferenceRequest:
    return InferenceRequest("countdown", [Tensor("N", "INT32", (1,), np.array([n], np.int32))])


async def test_a_stream_without_aclose_answers_in_full(tmp_path: Path) -> None:
    async with InProcessServer(_settings(tmp_path), [CountdownPlugin()]) as server:
        got = [r async for r in server.context.dataplane.inference.stream(_request(3))]
        assert [int(r.outputs[0].data[0]) for r in got] == [3, 2, 1]
        assert server.running.models.get("countdown").in_flight == 0


async def test_a_stream_without_aclose_stops_early_and_is_released(tmp_path: Path) -> None:
    async with InProcessServer(_settings(tmp_path), [CountdownPlugin()]) as server:
        responses = server.context.dataplane.inference.stream(_request(100))
        first = await anext(responses)
        assert int(first.outputs[0].data[0]) == 100
        await responses.aclose()
        assert server.running.models.get("countdown").in_flight == 0
