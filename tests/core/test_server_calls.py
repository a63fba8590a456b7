"""What a backend may call back on the server (ServerCalls), on a real in-process server.

A backend's ``dataplane`` is typed as the small :class:`~modelplatform.ServerCalls`
protocol: infer, stream, resolve, model_ready, load. The object the server
hands its backends must offer each of them as the protocol declares it, and
each call must reach the server's models.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from modelplatform import (
    Backend,
    ExecuteResult,
    InferenceRequest,
    ServerCalls,
    Settings,
    Tensor,
    hookimpl,
)
from modelplatform.testing import FunctionBackendPlugin, InProcessServer, free_port, function_model

CONFIG = """
name: "{name}"
backend: "{backend}"
max_batch_size: 0
input [ {{ name: "A" data_type: TYPE_FP32 dims: [ 2 ] }} ]
output [ {{ name: "B" data_type: TYPE_FP32 dims: [ 2 ] }} ]
"""
#: The protocol's methods: what a backend may call, and nothing else.
CALLS = sorted(
    name for name, value in vars(ServerCalls).items() if callable(value) and not name.startswith("_")
)


class CallerBackend(Backend):
    """Loads ``double`` at its own load (when not ready), then answers with double's answer."""

    kind: ClassVar[str] = "caller"
    calls: ClassVar[list[ServerCalls]] = []
    loaded_double: ClassVar[list[bool]] = []

    async def load(self) -> None:
        assert self.dataplane is not None
        type(self).calls.append(self.dataplane)
        if not self.dataplane.model_ready("double"):
            await self.dataplane.load("double")
        type(self).loaded_double.append(self.dataplane.resolve("double").ready)

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        assert self.dataplane is not None
        return [await self.dataplane.infer(InferenceRequest("double", r.inputs)) for r in batch]


class CallerPlugin:
    @staticmethod
    @hookimpl
    def register_backends(settings: Settings) -> list[type[Backend]]:
        return [CallerBackend]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    for name, backend in (("caller", "caller"), ("double", "function")):
        (tmp_path / name / "1").mkdir(parents=True)
        (tmp_path / name / "config.pbtxt").write_text(CONFIG.format(name=name, backend=backend))
    function_model("double", lambda inputs: {"B": inputs["A"] * 2})
    CallerBackend.calls.clear()
    CallerBackend.loaded_double.clear()
    return tmp_path


def _server(repo: Path) -> InProcessServer:
    settings = Settings(
        model_repository=repo,
        host="127.0.0.1",
        http_port=free_port(),
        grpc_port=free_port(),
        plugins=("python",),
        load_models=("caller",),
    )
    return InProcessServer(settings, [FunctionBackendPlugin, CallerPlugin])


def test_the_protocol_holds_the_five_call_backs():
    assert CALLS == ["infer", "load", "model_ready", "resolve", "stream"]


async def test_what_backends_get_offers_every_call_as_the_protocol_declares_it(repo: Path):
    async with _server(repo):
        (handed,) = CallerBackend.calls
        for name in CALLS:
            declared, offered = getattr(ServerCalls, name), getattr(handed, name)
            assert inspect.iscoroutinefunction(offered) == inspect.iscoroutinefunction(declared), name
            _assert_accepts(inspect.signature(declared), inspect.signature(offered), name)


async def test_a_backend_loads_resolves_and_calls_another_model_through_its_call_backs(repo: Path):
    async with _server(repo) as server:
        assert CallerBackend.loaded_double == [True]  # loaded by the caller's load, then resolved READY
        dataplane = server.context.dataplane
        request = InferenceRequest("caller", [Tensor.from_array("A", np.array([1, 2], np.float32))])
        response = await dataplane.inference.infer(request)
        assert response.outputs[0].data.tolist() == [2.0, 4.0]
        (handed,) = CallerBackend.calls
        streamed = [r async for r in handed.stream(InferenceRequest("double", request.inputs))]
        assert [(r.final, r.outputs[0].data.tolist()) for r in streamed] == [(True, [2.0, 4.0])]


def _assert_accepts(declared: inspect.Signature, offered: inspect.Signature, name: str) -> None:
    """Every declared parameter is offered with the same kind and default; extra ones are optional."""
    wanted = {p.name: p for p in list(declared.parameters.values())[1:]}  # without self
    for parameter in offered.parameters.values():
        if parameter.name in wanted:
            expected = wanted.pop(parameter.name)
            assert (parameter.kind, parameter.default) == (expected.kind, expected.default), name
        else:
            assert parameter.default is not inspect.Parameter.empty, f"{name}: {parameter.name} is required"
    assert not wanted, f"{name} lacks {sorted(wanted)}"
