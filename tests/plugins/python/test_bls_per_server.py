"""BLS goes through the server that runs the calling model, with two servers in one process.

Two in-process servers share this test's event loop. Each serves a model
named ``callee`` that adds its own constant (1 on one server, 2 on the
other) and the same callers, which call ``callee`` through Triton's
``pb_utils.InferenceRequest(...).exec()`` (a plain ``execute``, on the
instance's thread), ``async_exec()`` (an ``async def execute``, on the loop),
from a ``Model`` class, and from a decoupled model. Each caller must get its
own server's answer, however the two servers' requests interleave. A thread
the model starts itself has no context to find its server in: it reaches the
only server of the process, and is refused clearly when there are two.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from modelplatform import InferenceRequest, ModelPlatformError, Settings, Tensor
from modelplatform.testing import InProcessServer, free_port

CONFIG = """
name: "{name}"
backend: "python"
input [ {{ name: "IN" data_type: TYPE_FP32 dims: [ -1 ] }} ]
output [ {{ name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] }} ]
{extra}
"""
CALLEE = """
class Model:
    def infer(self, inputs):
        return {{"OUT": inputs["IN"] + {added}}}
"""
HEADER = """
import threading

import triton_python_backend_utils as pb_utils


def nested(request):
    return pb_utils.InferenceRequest(
        model_name="callee", requested_output_names=["OUT"], inputs=request.inputs()
    )


def answer(called):
    if called.has_error():
        raise pb_utils.TritonModelException(called.error().message())
    return pb_utils.InferenceResponse([pb_utils.Tensor("OUT", called.output_tensors()[0].as_numpy())])
"""
CALLERS = {
    # A plain execute: on the instance's thread (exec() blocks, so it never runs inline).
    "caller_exec": """
class TritonPythonModel:
    def execute(self, requests):
        return [answer(nested(r).exec()) for r in requests]
""",
    # An async execute: on the event loop, in the request's task.
    "caller_async_exec": """
class TritonPythonModel:
    async def execute(self, requests):
        return [answer(await nested(r).async_exec()) for r in requests]
""",
    # Our own Model class using pb_utils from a plain infer (on the instance's thread).
    "caller_model": """
class Model:
    def infer(self, inputs):
        called = pb_utils.InferenceRequest(
            model_name="callee", requested_output_names=["OUT"],
            inputs=[pb_utils.Tensor("IN", inputs["IN"])],
        ).exec()
        return {"OUT": called.output_tensors()[0].as_numpy()}
""",
    # A decoupled model: execute runs in its own task, on the instance's thread.
    "caller_decoupled": """
class TritonPythonModel:
    def execute(self, requests):
        sender = requests[0].get_response_sender()
        sender.send(answer(nested(requests[0]).exec()), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
""",
    # A decoupled model calling from a thread it starts itself (an empty context).
    "caller_own_thread": """
class TritonPythonModel:
    def execute(self, requests):
        sender = requests[0].get_response_sender()
        threading.Thread(target=self.run, args=(requests[0], sender), daemon=True).start()

    def run(self, request, sender):
        try:
            response = answer(nested(request).exec())
        except Exception as error:
            response = pb_utils.InferenceResponse(error=pb_utils.TritonError(str(error)))
        sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
""",
}
DECOUPLED_CALLERS = ["caller_decoupled", "caller_own_thread"]
DECOUPLED = "model_transaction_policy { decoupled: true }"
UNARY_CALLERS = ["caller_exec", "caller_async_exec", "caller_model"]
IN = [1.0, 2.0, 3.0]


def _model(root: Path, name: str, source: str, extra: str = "") -> None:
    (root / name / "1").mkdir(parents=True)
    (root / name / "config.pbtxt").write_text(CONFIG.format(name=name, extra=extra))
    (root / name / "1" / "model.py").write_text(textwrap.dedent(source))


def _repository(root: Path, added: int) -> Path:
    _model(root, "callee", CALLEE.format(added=added))
    for name, source in CALLERS.items():
        _model(root, name, HEADER + source, DECOUPLED if name in DECOUPLED_CALLERS else "")
    return root


def _settings(repository: Path) -> Settings:
    return Settings(
        model_repository=repository,
        host="127.0.0.1",
        http_port=free_port(),
        grpc_port=free_port(),
        plugins=("python", "oip-rest"),
        drain_delay_secs=0,
    )


def _post(port: int, model: str) -> list[float]:
    body = {"inputs": [{"name": "IN", "shape": [len(IN)], "datatype": "FP32", "data": IN}]}
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v2/models/{model}/infer",
        json.dumps(body).encode(),
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.loads(reply.read())["outputs"][0]["data"]


@pytest.fixture
async def servers(tmp_path):
    """Two servers in this process, on this loop; each ``callee`` adds its own constant."""
    one = InProcessServer(_settings(_repository(tmp_path / "one", added=1)))
    two = InProcessServer(_settings(_repository(tmp_path / "two", added=2)))
    async with one, two:
        yield {1: one, 2: two}


@pytest.mark.parametrize("caller", UNARY_CALLERS)
async def test_each_server_s_caller_gets_its_own_server_s_answer(servers, caller):
    # Past the calls measured on the thread, alternating servers, then both at once.
    for _ in range(6):
        for added, server in servers.items():
            answer = await asyncio.to_thread(_post, server.context.settings.http_port, caller)
            assert answer == [x + added for x in IN], (caller, added)
    concurrent = [
        asyncio.to_thread(_post, server.context.settings.http_port, caller)
        for _ in range(4)
        for server in servers.values()
    ]
    answers = await asyncio.gather(*concurrent)
    assert answers == [[x + added for x in IN] for _ in range(4) for added in servers]


async def test_a_decoupled_caller_gets_its_own_server_s_answer(servers):
    for added, server in servers.items():
        assert await _streamed(server, "caller_decoupled") == [[x + added for x in IN]]


async def test_a_thread_the_model_started_is_refused_clearly_while_two_servers_run(servers):
    for server in servers.values():
        with pytest.raises(ModelPlatformError, match="several servers run in this process"):
            await _streamed(server, "caller_own_thread")


async def test_a_thread_the_model_started_reaches_the_only_server(tmp_path):
    async with InProcessServer(_settings(_repository(tmp_path, added=1))) as server:
        assert await _streamed(server, "caller_own_thread") == [[x + 1 for x in IN]]


async def _streamed(server: InProcessServer, model: str) -> list[list[float]]:
    request = InferenceRequest(model, [Tensor.from_array("IN", np.array(IN, np.float32))])
    return [r.output("OUT").data.tolist() async for r in server.context.dataplane.inference.stream(request)]
