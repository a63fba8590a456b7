"""`make bench` pipeline rows: what a nested call and an ensemble cost (issue 18).

In process (the DataPlane called in a loop, no transport), per request:

- ``simple`` called directly: the inner model's own cost;
- a python model whose ``async def infer`` awaits ``models.infer_async("simple")``
  against the same model without the nested call: the difference is the cost
  of one nested call (goal: under 100 us);
- the Triton BLS model ``bls_simple`` (a blocking ``exec()`` from its thread);
- ``simple_ensemble`` (two steps of ``simple``) against two direct calls.

Over HTTP with tritonclient (one client, sequential): ``simple_ensemble``
against the two ``simple`` calls a client would make instead.

    python benchmarks/pipelines.py           # or: make bench BENCH_ARGS="--only pipelines"
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from modelplatform import InferenceRequest, Settings, Tensor
from modelplatform.testing import InProcessServer, ServerProcess

ROOT = Path(__file__).resolve().parent.parent
CALLS = 3000
HTTP_CALLS = 500
PAIR = (
    "max_batch_size: 8\n"
    'input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },'
    ' { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]\n'
    'output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] },'
    ' { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]\n'
)
NESTED = """
class Model:
    def load(self, config, version_dir, models):
        self.models = models

    async def infer(self, inputs):
        return await self.models.infer_async("simple", inputs)
"""
ALONE = """
class Model:
    async def infer(self, inputs):
        a, b = inputs["INPUT0"], inputs["INPUT1"]
        return {"OUTPUT0": a, "OUTPUT1": b}
"""


def repository() -> Path:
    root = Path(tempfile.mkdtemp(prefix="bench-pipelines-"))
    for name in ("simple", "simple_ensemble", "bls_simple"):
        shutil.copytree(ROOT / "model_repository" / name, root / name)
    for name, source in (("nested_async", NESTED), ("alone_async", ALONE)):
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n{PAIR}')
        (root / name / "1" / "model.py").write_text(source)
    return root


def in_process_rows(root: Path) -> list[dict[str, Any]]:
    settings = Settings(model_repository=root, http_port=0, grpc_port=0)
    return asyncio.run(
        _in_process(
            dataclasses.replace(
                settings, plugin_options={"metrics": {"metrics_port": 0, "allow_metrics": False}}
            )
        )
    )


async def _in_process(settings: Settings) -> list[dict[str, Any]]:
    async with InProcessServer(settings) as server:
        dataplane = server.context.dataplane
        a = np.arange(16, dtype=np.int32).reshape(1, 16)

        def request(model: str) -> InferenceRequest:
            tensors = [Tensor.from_array("INPUT0", a), Tensor.from_array("INPUT1", a)]
            return InferenceRequest(model, tensors)

        models = ("simple", "alone_async", "nested_async", "bls_simple", "simple_ensemble")
        times = {m: await _per_call(lambda m=m: dataplane.inference.infer(request(m))) for m in models}
    nested = times["nested_async"] - times["alone_async"]
    return [
        _row("simple, direct (in-process)", times["simple"]),
        _row("async model, no nested call", times["alone_async"]),
        _row(
            "async model + models.infer_async(simple)",
            times["nested_async"],
            f"nested call {nested:.1f} us ({nested - times['simple']:+.1f} us over simple alone)",
        ),
        _row(
            "Triton BLS bls_simple (exec() on its thread)",
            times["bls_simple"],
            f"{times['bls_simple'] - times['simple']:.1f} us over simple alone",
        ),
        _row(
            "simple_ensemble, 2 steps (in-process)",
            times["simple_ensemble"],
            f"2 direct calls: {2 * times['simple']:.1f} us",
        ),
    ]


async def _per_call(call: Callable[[], Any]) -> float:
    """Microseconds per call: the best of three rounds (the machine is shared)."""
    for _ in range(200):  # warm: past the python runner's measured first calls
        await call()
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(CALLS):
            await call()
        best = min(best, (time.perf_counter() - started) / CALLS * 1e6)
    return best


def client_rows(root: Path) -> list[dict[str, Any]]:
    import tritonclient.http as httpclient  # only these rows need it

    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    inputs = _pair(httpclient, a, a)
    with ServerProcess("--model-repository", str(root)) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        ensemble = _client_per_call(lambda: client.infer("simple_ensemble", inputs))

        def two_calls() -> None:
            first = client.infer("simple", inputs)
            total, difference = first.as_numpy("OUTPUT0"), first.as_numpy("OUTPUT1")
            client.infer("simple", _pair(httpclient, total, difference))

        separate = _client_per_call(two_calls)
        client.close()
    return [
        _row("simple_ensemble over HTTP (1 client call)", ensemble),
        _row(
            "simple twice over HTTP (2 client calls)",
            separate,
            f"ensemble saves {separate - ensemble:.0f} us",
        ),
    ]


def _pair(client_module: Any, first: np.ndarray, second: np.ndarray) -> list[Any]:
    inputs = [client_module.InferInput(n, [1, 16], "INT32") for n in ("INPUT0", "INPUT1")]
    inputs[0].set_data_from_numpy(first)
    inputs[1].set_data_from_numpy(second)
    return inputs


def _client_per_call(call: Callable[[], Any]) -> float:
    for _ in range(50):
        call()
    started = time.perf_counter()
    for _ in range(HTTP_CALLS):
        call()
    return (time.perf_counter() - started) / HTTP_CALLS * 1e6


def _row(label: str, micros: float, note: str = "") -> dict[str, Any]:
    return {"scenario": label, "us_per_request": round(micros, 1), "note": note}


def rows() -> list[dict[str, Any]]:
    root = repository()
    try:
        return in_process_rows(root) + client_rows(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def print_rows(found: list[dict[str, Any]]) -> None:
    print(f"\n{'pipelines':50s} {'us/request':>11s}  note")
    for row in found:
        print(f"{row['scenario']:50s} {row['us_per_request']:11.1f}  {row['note']}")


if __name__ == "__main__":
    print_rows(rows())
