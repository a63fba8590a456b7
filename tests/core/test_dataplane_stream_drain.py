"""dataplane.inference.stream (generator models) and readiness holds (a plugin's drain switch)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from modelplatform import (
    Backend,
    ExecuteResult,
    InferenceRequest,
    InferenceResponse,
    InvalidInput,
    ModelExecutionError,
    Settings,
    Tensor,
    hookimpl,
)
from modelplatform.testing import FunctionBackendPlugin, InProcessServer, free_port, function_model

CONFIG = """
name: "{name}"
backend: "{backend}"
max_batch_size: 0
input [ {{ name: "N" data_type: TYPE_INT32 dims: [ 1 ] }} ]
output [ {{ name: "I" data_type: TYPE_INT32 dims: [ 1 ] }} ]
"""
CLOSED: list[int] = []


class CountingBackend(Backend):
    """Streams I = 1..N, then fails when N is negative; records being closed early."""

    kind: ClassVar[str] = "counting"

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        return [InferenceResponse(r.model_name, "", []) for r in batch]

    async def stream(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:  # type: ignore[override]  # a generator where Backend says AsyncIterator
        n = int(request.inputs[0].data[0])
        try:
            for i in range(1, abs(n) + 1):
                yield InferenceResponse(
                    request.model_name, "", [Tensor.from_array("I", np.array([i], np.int32))]
                )
            if n < 0:
                raise RuntimeError("negative")
        except GeneratorExit:
            CLOSED.append(n)
            raise


class CountingPlugin:
    @staticmethod
    @hookimpl
    def register_backends(settings: Settings) -> list[type[Backend]]:
        return [CountingBackend]


def _model(root: Path, name: str, backend: str) -> None:
    (root / name / "1").mkdir(parents=True)
    (root / name / "config.pbtxt").write_text(CONFIG.format(name=name, backend=backend))


def _settings(repo: Path) -> Settings:
    return Settings(
        model_repository=repo,
        host="127.0.0.1",
        http_port=free_port(),
        grpc_port=free_port(),
        plugins=("python",),
    )


def _request(model: str, n: int, datatype: str = "INT32") -> InferenceRequest:
    array = np.array([n], dtype=np.int32 if datatype == "INT32" else np.float32)
    return InferenceRequest(model, [Tensor("N", datatype, (1,), array)])


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    _model(tmp_path, "counter", "counting")
    _model(tmp_path, "plain", "function")
    function_model("plain", lambda inputs: {"I": inputs["N"]})
    return tmp_path


async def test_stream_yields_every_response_and_counts_stats(repo: Path) -> None:
    async with InProcessServer(_settings(repo), [CountingPlugin(), FunctionBackendPlugin()]) as server:
        dataplane = server.context.dataplane
        got = [r async for r in dataplane.inference.stream(_request("counter", 3))]
        assert [int(r.outputs[0].data[0]) for r in got] == [1, 2, 3]
        assert all(r.model_name == "counter" and r.model_version == "1" for r in got)
        stats = server.running.models.get("counter").stats
        assert stats.inference_count == 1


async def test_stream_validates_and_wraps_errors(repo: Path) -> None:
    async with InProcessServer(_settings(repo), [CountingPlugin(), FunctionBackendPlugin()]) as server:
        dataplane = server.context.dataplane
        with pytest.raises(InvalidInput):
            [r async for r in dataplane.inference.stream(_request("counter", 1, "FP32"))]
        seen = []
        with pytest.raises(ModelExecutionError, match="negative"):
            async for response in dataplane.inference.stream(_request("counter", -2)):
                seen.append(response)
        assert len(seen) == 2
        # Issue 18: a model that does not stream answers a stream once, through infer.
        (only,) = [r async for r in dataplane.inference.stream(_request("plain", 1))]
        assert only.final and only.model_name == "plain"


async def test_closing_the_stream_early_closes_the_backend_stream(repo: Path) -> None:
    async with InProcessServer(_settings(repo), [CountingPlugin(), FunctionBackendPlugin()]) as server:
        model = server.running.models.get("counter")
        responses = server.context.dataplane.inference.stream(_request("counter", 100))
        await anext(responses)
        assert model.in_flight == 1
        await responses.aclose()
        assert CLOSED[-1] == 100 and model.in_flight == 0


async def test_a_readiness_hold_makes_the_server_not_ready(repo: Path) -> None:
    async with InProcessServer(_settings(repo), [CountingPlugin(), FunctionBackendPlugin()]) as server:
        dataplane = server.context.dataplane
        assert dataplane.health.ready()
        dataplane.health.hold_readiness("maintenance")
        assert not dataplane.health.ready() and dataplane.health.live
        dataplane.health.release_readiness("maintenance")
        assert dataplane.health.ready()
