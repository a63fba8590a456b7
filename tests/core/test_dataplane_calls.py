"""dataplane.inference.call_raw and .stream: in flight, in the statistics, on every instance."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from modelplatform import (
    Backend,
    ExecuteResult,
    InferenceRequest,
    InferenceResponse,
    ModelExecutionError,
    RawResponse,
    Settings,
    Tensor,
    hookimpl,
)
from modelplatform.testing import InProcessServer, free_port

CONFIG = """
name: "raw"
backend: "rawcalls"
max_batch_size: 0
input [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "I" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
"""
GATES: dict[str, asyncio.Event] = {}


class RawCallsBackend(Backend):
    """Answers raw calls and streams with its instance index; the body picks the behaviour."""

    kind: ClassVar[str] = "rawcalls"

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        return [InferenceResponse(r.model_name, "", []) for r in batch]

    async def handle_raw(self, body: bytes, headers: Mapping[str, str]) -> RawResponse:
        if body == b"fail":
            raise RuntimeError("boom")
        if body == b"wait":
            await GATES["raw"].wait()
        if body in (b"chunks", b"bad chunks"):
            return RawResponse(self._chunks(body == b"bad chunks"), "text/plain", 201)
        return RawResponse(f"{self.instance_index}:{headers.get('x-who', '')}".encode(), "text/plain")

    async def _chunks(self, fail: bool) -> AsyncIterator[bytes]:
        yield b"a"
        if fail:
            raise RuntimeError("broken chunk")
        yield b"b"

    async def stream(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:  # type: ignore[override]  # a generator where Backend says AsyncIterator
        for _ in range(int(request.inputs[0].data[0])):
            if "stream" in GATES:
                await GATES["stream"].wait()
            yield InferenceResponse(
                request.model_name, "", [Tensor.from_array("I", np.array([self.instance_index], np.int32))]
            )


class RawCallsPlugin:
    @staticmethod
    @hookimpl
    def register_backends(settings: Settings) -> list[type[Backend]]:
        return [RawCallsBackend]


@pytest.fixture
def server(tmp_path: Path) -> InProcessServer:
    GATES.clear()
    (tmp_path / "raw" / "1").mkdir(parents=True)
    (tmp_path / "raw" / "config.pbtxt").write_text(CONFIG)
    settings = Settings(
        model_repository=tmp_path,
        host="127.0.0.1",
        http_port=free_port(),
        grpc_port=free_port(),
        plugins=("python",),
    )
    return InProcessServer(settings, [RawCallsPlugin()])


def _counts(server: InProcessServer) -> tuple[int, int, int, dict[int, int]]:
    """(successes, failures, executions, executions per instance) of model ``raw``."""
    stats = server.running.models.get("raw").stats
    return (
        stats.durations["success"].count,
        stats.durations["fail"].count,
        stats.execution_count,
        dict(stats.instances),
    )


def _in_flight(server: InProcessServer) -> int:
    return server.running.models.get("raw").in_flight


def _stream_request(n: int) -> InferenceRequest:
    return InferenceRequest("raw", [Tensor("N", "INT32", (1,), np.array([n], np.int32))])


async def test_raw_calls_answer_take_turns_and_count_in_the_statistics(server: InProcessServer) -> None:
    async with server:
        dataplane = server.context.dataplane
        answers = [await dataplane.inference.call_raw("raw", "", b"hi", {"x-who": "me"}) for _ in range(4)]
        assert [a.body for a in answers] == [b"0:me", b"1:me", b"0:me", b"1:me"]
        assert answers[0].content_type == "text/plain" and answers[0].status == 200
        assert _counts(server) == (4, 0, 4, {0: 2, 1: 2})
        assert _in_flight(server) == 0


async def test_a_failing_raw_call_is_counted_as_a_failure(server: InProcessServer) -> None:
    async with server:
        with pytest.raises(ModelExecutionError, match="boom"):
            await server.context.dataplane.inference.call_raw("raw", "1", b"fail", {})
        assert _counts(server)[:2] == (0, 1) and _in_flight(server) == 0


async def test_unload_waits_for_a_raw_call_in_flight(server: InProcessServer) -> None:
    async with server:
        dataplane = server.context.dataplane
        GATES["raw"] = asyncio.Event()
        call = asyncio.ensure_future(dataplane.inference.call_raw("raw", "", b"wait", {}))
        while _in_flight(server) == 0:
            await asyncio.sleep(0.001)
        model = server.running.models.get("raw")
        unload = asyncio.ensure_future(dataplane.repository.unload("raw"))
        await asyncio.sleep(0.05)
        assert not unload.done() and model.state.value == "UNLOADING"
        GATES["raw"].set()
        assert (await asyncio.wait_for(call, 5)).body == b"0:"
        await asyncio.wait_for(unload, 5)
        assert model.state.value == "UNAVAILABLE" and model.stats is None


async def test_a_streamed_raw_body_stays_in_flight_until_read_to_the_end(server: InProcessServer) -> None:
    async with server:
        raw = await server.context.dataplane.inference.call_raw("raw", "", b"chunks", {})
        assert (raw.status, raw.content_type) == (201, "text/plain")
        assert _in_flight(server) == 1
        assert [chunk async for chunk in raw.body] == [b"a", b"b"]  # type: ignore[union-attr]  # a streamed raw body
        assert _in_flight(server) == 0 and _counts(server)[:2] == (1, 0)


async def test_closing_a_streamed_raw_body_early_ends_the_call_uncounted(server: InProcessServer) -> None:
    async with server:
        dataplane = server.context.dataplane
        raw = await dataplane.inference.call_raw("raw", "", b"chunks", {})
        assert await anext(raw.body) == b"a"  # type: ignore[arg-type]  # a streamed raw body
        await raw.body.aclose()  # type: ignore[union-attr]  # a streamed raw body
        unread = await dataplane.inference.call_raw("raw", "", b"chunks", {})
        assert _in_flight(server) == 1
        await unread.body.aclose()  # type: ignore[union-attr]  # a streamed raw body
        assert _in_flight(server) == 0 and _counts(server)[:2] == (0, 0)
        await asyncio.wait_for(dataplane.repository.unload("raw"), 5)


async def test_a_failing_chunk_fails_the_call(server: InProcessServer) -> None:
    async with server:
        raw = await server.context.dataplane.inference.call_raw("raw", "", b"bad chunks", {})
        with pytest.raises(ModelExecutionError, match="broken chunk"):
            [chunk async for chunk in raw.body]  # type: ignore[union-attr]  # a streamed raw body
        assert _in_flight(server) == 0 and _counts(server)[:2] == (0, 1)


async def test_streams_spread_over_every_instance_and_count_in_flight(server: InProcessServer) -> None:
    async with server:
        dataplane = server.context.dataplane
        GATES["stream"] = asyncio.Event()
        async with (
            contextlib.aclosing(dataplane.inference.stream(_stream_request(2))) as first,
            contextlib.aclosing(dataplane.inference.stream(_stream_request(2))) as second,
        ):
            reads = [asyncio.ensure_future(anext(first)), asyncio.ensure_future(anext(second))]
            await asyncio.sleep(0.01)
            assert _in_flight(server) == 2  # both open at once
            GATES["stream"].set()
            indexes = [int(r.outputs[0].data[0]) for r in await asyncio.gather(*reads)]
            assert sorted(indexes) == [0, 1]
            rest = [[int(r.outputs[0].data[0]) async for r in s] for s in (first, second)]
            assert rest == [[indexes[0]], [indexes[1]]]
        assert _in_flight(server) == 0
        assert _counts(server) == (2, 0, 2, {0: 1, 1: 1})
