"""model_repository/simple_torchscript: the committed file is what the script builds, and it serves."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tritonclient.http as httpclient  # noqa: E402 - after importorskip: skipped cleanly without torch

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "model_repository" / "simple_torchscript" / "1" / "model.pt"


def _builder():
    spec = importlib.util.spec_from_file_location(
        "build_torchscript_model", ROOT / "scripts" / "build_torchscript_model.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_model_is_what_the_script_builds():
    fresh, committed = _builder().build(), torch.jit.load(str(COMMITTED))
    fresh_state, committed_state = fresh.state_dict(), committed.state_dict()
    assert fresh_state.keys() == committed_state.keys()
    for name, tensor in fresh_state.items():
        assert torch.equal(tensor, committed_state[name]), name
    assert fresh.code == committed.code


def test_bundled_repository_serves_it(server):
    rows = np.random.default_rng(3).random((5, 16), dtype=np.float32)
    tensor = httpclient.InferInput("INPUT__0", [5, 16], "FP32")
    tensor.set_data_from_numpy(rows)
    with httpclient.InferenceServerClient(server.http_url) as client:
        assert client.get_model_metadata("simple_torchscript")["platform"] == "pytorch_libtorch"
        probabilities = client.infer("simple_torchscript", [tensor]).as_numpy("OUTPUT__0")
    expected = _builder().build()(torch.from_numpy(rows)).detach().numpy()
    np.testing.assert_allclose(probabilities, expected, rtol=1e-6)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-6)
