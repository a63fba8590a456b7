"""Config fields a python model's answers depend on, which were read and then ignored (issue 29
point 6): ``reshape`` (the model sees the reshaped inputs and produces the reshaped outputs; clients
keep ``dims``) and ``default_model_filename``. Real server, tritonclient."""

from __future__ import annotations

import json
import textwrap
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient

from modelplatform.testing import ServerProcess

BATCHED = """
import numpy as np


class Model:
    def infer(self, inputs):
        x = inputs["X"]                       # (batch, 4): the reshape, not dims [2, 2]
        seen = np.array([x.shape] * x.shape[0], dtype=np.int32)
        return {"Y": (x + 1).reshape(x.shape[0], 2, 2), "SEEN": seen}   # Y's reshape [2, 2]
"""

BATCHED_CONFIG = """
backend: "python"
max_batch_size: 4
input [ { name: "X" data_type: TYPE_FP32 dims: [ 2, 2 ] reshape: { shape: [ 4 ] } } ]
output [
  { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] reshape: { shape: [ 2, 2 ] } },
  { name: "SEEN" data_type: TYPE_INT32 dims: [ 2 ] }
]
"""

SCALAR = """
import numpy as np


class Model:
    def infer(self, inputs):
        x = inputs["X"]
        assert x.shape == (), x.shape         # dims [1] with reshape: { shape: [ ] }
        return {"Y": np.float32(x * 2)}
"""

SCALAR_CONFIG = """
backend: "python"
input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] reshape: { shape: [ ] } } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] reshape: { shape: [ ] } } ]
"""


RENAMED = """
class Model:
    def infer(self, inputs):
        return {"Y": inputs["X"] * 3}
"""

RENAMED_CONFIG = """
backend: "python"
default_model_filename: "tripler.py"
input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root: Path = tmp_path_factory.mktemp("reshape")
    for name, model, config in (("batched", BATCHED, BATCHED_CONFIG), ("scalar", SCALAR, SCALAR_CONFIG)):
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(config)
        (root / name / "1" / "model.py").write_text(textwrap.dedent(model))
    (root / "renamed" / "1").mkdir(parents=True)
    (root / "renamed" / "config.pbtxt").write_text(RENAMED_CONFIG)
    (root / "renamed" / "1" / "tripler.py").write_text(textwrap.dedent(RENAMED))
    for name, extra in (("tagged", 'metric_tags { key: "team" value: "a" }'),
                        ("hinted", "optimization { input_pinned_memory { enable: true } }")):  # fmt: skip
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(RENAMED_CONFIG.replace("tripler.py", "model.py") + extra)
        (root / name / "1" / "model.py").write_text(textwrap.dedent(RENAMED))
    with ServerProcess("--model-repository", str(root)) as process:
        yield process


def test_the_model_sees_the_reshape_and_the_client_sees_dims(server: ServerProcess) -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    tensor = httpclient.InferInput("X", [3, 2, 2], "FP32")
    tensor.set_data_from_numpy(x)
    with httpclient.InferenceServerClient(server.http_url) as client:
        result = client.infer("batched", [tensor])
        assert client.get_model_metadata("batched")["outputs"][0]["shape"] == [-1, 4]
    assert result.as_numpy("SEEN").tolist() == [[3, 4]] * 3
    np.testing.assert_array_equal(result.as_numpy("Y"), (x + 1).reshape(3, 4))


def test_a_scalar_reshape(server: ServerProcess) -> None:
    tensor = httpclient.InferInput("X", [1], "FP32")
    tensor.set_data_from_numpy(np.array([2.5], dtype=np.float32))
    with httpclient.InferenceServerClient(server.http_url) as client:
        result = client.infer("scalar", [tensor])
    assert result.as_numpy("Y").tolist() == [5.0]


def test_default_model_filename_names_the_python_file(server: ServerProcess) -> None:
    tensor = httpclient.InferInput("X", [1], "FP32")
    tensor.set_data_from_numpy(np.array([2.0], dtype=np.float32))
    with httpclient.InferenceServerClient(server.http_url) as client:
        assert client.infer("renamed", [tensor]).as_numpy("Y").tolist() == [6.0]


def test_a_refused_field_fails_the_load_by_name_and_a_hint_does_not(server: ServerProcess) -> None:
    request = urllib.request.Request(f"http://{server.http_url}/v2/repository/index", b"", method="POST")
    with urllib.request.urlopen(request, timeout=30) as reply:
        entries = {entry["name"]: entry for entry in json.loads(reply.read())}
    assert entries["tagged"]["state"] == "UNAVAILABLE"
    assert "config field 'metric_tags' is not supported" in entries["tagged"]["reason"]
    assert entries["hinted"]["state"] == "READY"
    assert "config_hints_ignored" in server.log()
