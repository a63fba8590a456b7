"""Latency histogram bounds belong to one server (issue 27 point 4): two servers in one
process, each with its own ``--metrics-config histogram_buckets_us``, export their own."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from modelplatform import InferenceRequest, Tensor
from modelplatform.testing import (
    FunctionBackendPlugin,
    InProcessServer,
    free_port,
    function_model,
    resolved_settings,
)
from modelplatform_metrics.routes import service_of

from .scraping import scrape

CONFIG = """
name: "double"
backend: "function"
input [ { name: "A" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [ { name: "B" data_type: TYPE_FP32 dims: [ 2 ] } ]
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "double" / "1").mkdir(parents=True)
    (tmp_path / "double" / "config.pbtxt").write_text(CONFIG)
    function_model("double", lambda inputs: {"B": inputs["A"] * 2})
    return tmp_path


def _server(repo: Path, bounds: str) -> InProcessServer:
    settings = resolved_settings(model_repository=repo, host="127.0.0.1", http_port=free_port(),
                                 grpc_port=free_port(), plugins=("metrics",),
                                 metrics_config=(f"histogram_buckets_us={bounds}",))  # fmt: skip
    return InProcessServer(settings, [FunctionBackendPlugin])


def _exported_bounds(port: int) -> list[float]:
    _, samples = scrape(port)
    return sorted(
        float(dict(labels)["le"])
        for (name, labels), _ in samples.items()
        if name == "nv_inference_request_duration_histogram_us_bucket" and dict(labels)["model"] == "double"
    )


async def test_two_servers_in_one_process_each_export_their_own_buckets(repo):
    # Both are composed before either loads a model: a process-wide setting would
    # give the first server's models the second server's bounds.
    first, second = _server(repo, "100,1000"), _server(repo, "5,50,500,5000")
    async with first, second:
        exported = []
        for server in (first, second):
            array = np.ones((2,), dtype=np.float32)
            await server.context.dataplane.inference.infer(
                InferenceRequest("double", [Tensor("A", "FP32", (2,), array)])
            )
            port = service_of(server.context).bound_port
            exported.append(await asyncio.to_thread(_exported_bounds, port))
    inf = float("inf")
    assert exported == [[100.0, 1000.0, inf], [5.0, 50.0, 500.0, 5000.0, inf]]
