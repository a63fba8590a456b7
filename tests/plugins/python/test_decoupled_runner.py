"""Triton decoupled python models in process: senders, final flags, failures, cancelling."""

from __future__ import annotations

import asyncio
import contextlib
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from modelplatform import (
    InferenceRequest,
    Internal,
    InvalidArgument,
    ModelConfig,
    ModelExecutionError,
    Tensor,
)
from modelplatform_python.backend import PythonBackend
from modelplatform_python.decoupled import WINDOW

HEADER = """
    import threading
    import time

    import numpy as np
    import triton_python_backend_utils as pb_utils

    FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL

    def response(value):
        return pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([value], np.float32))])
"""
# Sends every response from execute itself, the last one carrying the final flag.
INLINE = (
    HEADER
    + """
    class TritonPythonModel:
        def execute(self, requests):
            count = int(requests[0].inputs()[0].as_numpy()[0])
            sender = requests[0].get_response_sender()
            for value in range(1, count):
                sender.send(response(value))
            sender.send(response(count), flags=FINAL)
"""
)
# Returns at once; a thread sends until the request is cancelled, then records it.
FOREVER = (
    HEADER
    + """
    STOPPED = threading.Event()

    class TritonPythonModel:
        def execute(self, requests):
            sender = requests[0].get_response_sender()
            threading.Thread(target=self.run, args=(requests[0], sender), daemon=True).start()

        def run(self, request, sender):
            value = 0
            try:
                while not request.is_cancelled():
                    value += 1
                    sender.send(response(value))
                    time.sleep(0.005)
            except pb_utils.TritonModelException:
                pass
            STOPPED.set()
"""
)
FAILING = (
    HEADER
    + """
    class TritonPythonModel:
        def execute(self, requests):
            requests[0].get_response_sender().send(response(1))
            raise RuntimeError("gave up")
"""
)
RETURNING = (
    HEADER
    + """
    class TritonPythonModel:
        def execute(self, requests):
            return [response(1)]
"""
)
ERROR_RESPONSE = (
    HEADER
    + """
    class TritonPythonModel:
        def execute(self, requests):
            error = pb_utils.TritonError("no such word", pb_utils.TritonError.INVALID_ARG)
            sender = requests[0].get_response_sender()
            sender.send(pb_utils.InferenceResponse(error=error), flags=FINAL)
"""
)
NOT_DECOUPLED = (
    HEADER
    + """
    class TritonPythonModel:
        def execute(self, requests):
            requests[0].get_response_sender()
"""
)


def backend(tmp_path: Path, source: str, decoupled: bool = True) -> PythonBackend:
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "model.py").write_text(textwrap.dedent(source))
    config = ModelConfig.from_json({
        "name": "m",
        "backend": "python",
        "model_transaction_policy": {"decoupled": decoupled},
        "input": [{"name": "IN", "data_type": "TYPE_FP32", "dims": [1]}],
        "output": [{"name": "OUT", "data_type": "TYPE_FP32", "dims": [1]}],
    })  # fmt: skip
    return PythonBackend(config, tmp_path / "m" / "1")


def request(value: float) -> InferenceRequest:
    return InferenceRequest("m", [Tensor.from_array("IN", np.array([value], np.float32))])


@contextlib.asynccontextmanager
async def loaded(tmp_path: Path, source: str, decoupled: bool = True):
    model = backend(tmp_path, source, decoupled)
    await model.load()
    try:
        yield model
    finally:
        await model.unload()


async def test_every_send_arrives_in_order_past_the_window_and_the_last_is_final(tmp_path):
    count = WINDOW * 3  # execute sends them all from its own call: the reader must run beside it
    async with loaded(tmp_path, INLINE) as model:
        assert model.streams
        responses = [r async for r in model.stream(request(count))]
    assert [r.output("OUT").data.tolist() for r in responses] == [[v] for v in range(1, count + 1)]
    assert [r.final for r in responses] == [False] * (count - 1) + [True]


async def test_closing_the_stream_cancels_the_request_and_the_sender(tmp_path):
    async with loaded(tmp_path, FOREVER) as model:
        stream = model.stream(request(0))
        first = [(await anext(stream)).output("OUT").data.tolist() for _ in range(3)]
        assert first == [[1], [2], [3]]
        await stream.aclose()
        stopped: threading.Event = model._runner._module.STOPPED
        assert await asyncio.to_thread(stopped.wait, 30), "the model's thread kept sending"


async def test_an_execute_that_raises_fails_the_stream_after_what_it_sent(tmp_path):
    async with loaded(tmp_path, FAILING) as model:
        seen = []
        with pytest.raises(ModelExecutionError, match="RuntimeError: gave up"):
            async for response in model.stream(request(0)):
                seen.append(response)
    assert len(seen) == 1


async def test_a_decoupled_execute_must_return_none(tmp_path):
    async with loaded(tmp_path, RETURNING) as model:
        with pytest.raises(Internal, match="execute\\(\\) must return None"):
            [r async for r in model.stream(request(0))]


async def test_an_error_response_becomes_the_mapped_error(tmp_path):
    async with loaded(tmp_path, ERROR_RESPONSE) as model:
        with pytest.raises(InvalidArgument, match="no such word"):
            [r async for r in model.stream(request(0))]


async def test_a_model_that_is_not_decoupled_has_no_response_sender(tmp_path):
    async with loaded(tmp_path, NOT_DECOUPLED, decoupled=False) as model:
        assert not model.streams
        (error,) = await model.execute([request(0)])
    assert isinstance(error, ModelExecutionError) and "decoupled: true" in error.message
