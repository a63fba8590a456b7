"""TorchScript models behind a real server, asked by real clients: tritonclient HTTP and gRPC.

The models are scripted and traced by the test (models.py) into a temporary
repository; tritonclient.grpc runs in a subprocess (it cannot share protobuf's
pool with the server's protos in one process).
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tritonclient.http as httpclient  # noqa: E402 - after importorskip: skipped cleanly without torch
from tritonclient.utils import InferenceServerException  # noqa: E402 - as above

from modelplatform.testing import ServerProcess  # noqa: E402 - as above

from ..repository.helpers import grpc_client, index, post  # noqa: E402 - as above
from . import models  # noqa: E402 - imports torch

ROOT = Path(__file__).resolve().parents[3]
INSTALLED = {ep.name for ep in metadata.entry_points(group="modelplatform")}
PLUGINS = ",".join(
    p for p in ("oip-rest", "oip-grpc", "binary-data", "repository", "pytorch") if p in INSTALLED
)


@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> Path:
    return models.write_all(tmp_path_factory.mktemp("torch_repo"))


@pytest.fixture(scope="module")
def served(repository):
    with ServerProcess("--model-repository", str(repository), "--plugins", PLUGINS) as process:
        yield process


@pytest.fixture(scope="module")
def client(served):
    with httpclient.InferenceServerClient(served.http_url) as c:
        yield c


def _input(name: str, array: np.ndarray, datatype: str, binary: bool = True) -> httpclient.InferInput:
    tensor = httpclient.InferInput(name, list(array.shape), datatype)
    tensor.set_data_from_numpy(array, binary_data=binary)
    return tensor


def _rows(batch: int, width: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.random((batch, width), dtype=np.float32), rng.random((batch, width), dtype=np.float32)


@pytest.mark.parametrize("model", ["add_sub", "add_sub_traced"])
@pytest.mark.parametrize("binary", [True, False])
def test_http_scripted_and_traced(client, model, binary):
    a, b = _rows(3)
    result = client.infer(model, [_input("a", a, "FP32", binary), _input("b", b, "FP32", binary)])
    np.testing.assert_allclose(result.as_numpy("OUTPUT__0"), a + b, rtol=1e-6)
    np.testing.assert_allclose(result.as_numpy("OUTPUT__1"), a - b, rtol=1e-6)


def test_metadata_names_triton_platform(client):
    meta = client.get_model_metadata("add_sub")
    assert meta["platform"] == "pytorch_libtorch"
    assert meta["inputs"][0] == {"name": "a", "datatype": "FP32", "shape": [-1, 16]}
    assert client.get_model_config("indexed")["backend"] == "pytorch"


def test_http_index_convention_and_dict_input(client):
    a, b = _rows(2)
    result = client.infer("indexed", [_input("INPUT__1", b, "FP32"), _input("INPUT__0", a, "FP32")])
    np.testing.assert_allclose(result.as_numpy("OUTPUT__1"), a - b, rtol=1e-6)
    x, y = _rows(2, width=4, seed=1)
    result = client.infer("dict_input", [_input("x", x, "FP32"), _input("y", y, "FP32")])
    np.testing.assert_allclose(result.as_numpy("z"), x * 2 + y, rtol=1e-6)


def test_http_strings(client):
    words = np.array([b"torch", b"serving"], dtype=object)
    result = client.infer("strings", [_input("INPUT__0", words, "BYTES")])
    assert result.as_numpy("OUTPUT__0").tolist() == [b"TORCH", b"SERVING"]


def test_model_that_raises_fails_its_request_and_the_server_keeps_serving(client):
    bad = -np.ones((1, 4), np.float32)
    with pytest.raises(InferenceServerException) as caught:
        client.infer("raiser", [_input("INPUT__0", bad, "FP32")])
    assert caught.value.status() == "500"
    assert (
        "model 'raiser' failed: TorchScriptError: builtins.ValueError: negative input"
        in caught.value.message()
    )
    result = client.infer("raiser", [_input("INPUT__0", -bad, "FP32")])
    np.testing.assert_allclose(result.as_numpy("OUTPUT__0"), 3.0)


def test_grpc_multi_input_index_convention_and_error(served):
    result = grpc_client(
        served.grpc_url,
        """
        import numpy as np
        def tensor(name, array, datatype):
            made = grpcclient.InferInput(name, list(array.shape), datatype)
            made.set_data_from_numpy(array)
            return made
        x = np.array([[1.5, -2.0], [3.0, 4.0]], np.float64)
        scale = np.array([[2.0], [0.5]], np.float64)
        counts = np.array([[1, 2, 3], [10, 20, 30]], np.int64)
        mixed = client.infer("mixed", [tensor("x", x, "FP64"), tensor("scale", scale, "FP64"),
                                       tensor("counts", counts, "INT64")])
        a = np.arange(16, dtype=np.float32).reshape(1, 16)
        indexed = client.infer("indexed", [tensor("INPUT__0", a, "FP32"), tensor("INPUT__1", a * 0 + 1, "FP32")])
        try:
            client.infer("raiser", [tensor("INPUT__0", -np.ones((1, 4), np.float32), "FP32")])
            error = None
        except InferenceServerException as raised:
            error = [raised.status(), raised.message()]
        result = {
            "scaled": mixed.as_numpy("scaled").tolist(),
            "total": mixed.as_numpy("total").tolist(),
            "sum": indexed.as_numpy("OUTPUT__0").tolist(),
            "error": error,
        }
        """,
    )
    assert result["scaled"] == [[3.0, -4.0], [1.5, 2.0]]
    assert result["total"] == [[6], [60]]
    assert result["sum"] == [[float(i + 1) for i in range(16)]]
    assert result["error"][0] == "StatusCode.INTERNAL"
    assert "builtins.ValueError: negative input" in result["error"][1]


def _stats(served: ServerProcess, model: str) -> dict:
    with urllib.request.urlopen(f"http://{served.http_url}/v2/models/{model}/stats", timeout=30) as reply:
        return json.loads(reply.read())["model_stats"][0]


def test_dynamic_batching_runs_concurrent_requests_as_fewer_forwards(served, repository):
    expected_model = torch.jit.load(str(repository / "mlp" / "1" / "model.pt"))
    rows = [np.random.default_rng(seed).random((1, 16), dtype=np.float32) for seed in range(16)]
    before = _stats(served, "mlp")

    def ask(row: np.ndarray) -> np.ndarray:
        with httpclient.InferenceServerClient(served.http_url) as own:
            return own.infer("mlp", [_input("INPUT__0", row, "FP32")]).as_numpy("OUTPUT__0")

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(ask, rows))
    for row, answer in zip(rows, answers):
        np.testing.assert_allclose(answer, expected_model(torch.from_numpy(row)).detach().numpy(), atol=1e-6)
    after = _stats(served, "mlp")
    inferences = after["inference_count"] - before["inference_count"]
    executions = after["execution_count"] - before["execution_count"]
    assert inferences == 16
    assert executions < 16  # at least one forward answered several requests


def test_without_torch_the_backend_is_unavailable_and_the_server_serves_the_rest(tmp_path, repository):
    blocker = tmp_path / "no_torch"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\nsys.modules['torch'] = None  # as if not installed\n"
    )
    env = {"PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])}
    mixed = tmp_path / "repository"
    shutil.copytree(repository / "add_sub", mixed / "add_sub")
    shutil.copytree(ROOT / "model_repository" / "simple", mixed / "simple")
    with ServerProcess(
        "--model-repository", str(mixed), "--plugins", PLUGINS + ",python", env=env
    ) as process:
        entries = index(process.http_url)
        assert entries["simple"]["state"] == "READY"
        assert entries["add_sub"]["state"] == "UNAVAILABLE"
        assert "torch is not installed (pip install torch==2.13.0)" in entries["add_sub"]["reason"]
        tensors = [
            {"name": n, "shape": [1, 16], "datatype": "INT32", "data": [2] * 16} for n in ("INPUT0", "INPUT1")
        ]
        status, answer = post(
            process.http_url, "/v2/models/simple/infer", json.dumps({"inputs": tensors}).encode()
        )
    assert status == 200
    assert answer["outputs"][0]["data"] == [4] * 16
