"""A model.py written for Triton's python backend runs unchanged (with its config.pbtxt).

The model below follows Triton's documented interface only: TritonPythonModel
with initialize/execute/finalize, pb_utils tensors, responses and errors.
"""

from __future__ import annotations

import json
import textwrap
import urllib.error
import urllib.request
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient

from modelplatform import (
    InferenceRequest,
    InferenceResponse,
    Internal,
    InvalidArgument,
    ModelConfig,
    ModelExecutionError,
    Tensor,
)
from modelplatform.testing import ServerProcess
from modelplatform_python.backend import PythonBackend

MODEL_PY = """
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = model_config = json.loads(args["model_config"])
        self.marker = model_config["parameters"]["finalize_marker"]["string_value"]
        self.name = args["model_name"]
        output0 = pb_utils.get_output_config_by_name(model_config, "OUTPUT0")
        output1 = pb_utils.get_output_config_by_name(model_config, "OUTPUT1")
        self.output0_dtype = pb_utils.triton_string_to_numpy(output0["data_type"])
        self.output1_dtype = pb_utils.triton_string_to_numpy(output1["data_type"])

    def execute(self, requests):
        responses = []
        for request in requests:
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            if (in_0 == 13).any():
                raise RuntimeError("unlucky number in the batch")
            if (in_0 < 0).any():
                error = pb_utils.TritonError("INPUT0 must not be negative", pb_utils.TritonError.INVALID_ARG)
                responses.append(pb_utils.InferenceResponse(output_tensors=[], error=error))
                continue
            if (in_0 > 1000).any():
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError("too large")))
                continue
            out_0 = pb_utils.Tensor("OUTPUT0", (in_0 + in_1).astype(self.output0_dtype))
            out_1 = pb_utils.Tensor("OUTPUT1", (in_0 - in_1).astype(self.output1_dtype))
            seen = pb_utils.Tensor("REQUESTS_IN_CALL", np.array([len(requests)], dtype=np.int32))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out_0, out_1, seen]))
        return responses

    def finalize(self):
        with open(self.marker, "w") as handle:
            handle.write("finalized " + self.name)
"""

CONFIG = """
name: "add_sub"
backend: "python"
max_batch_size: 8
input [
  {{ name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] }},
  {{ name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] }}
]
output [
  {{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] }},
  {{ name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] }}
]
instance_group [ {{ kind: KIND_CPU }} ]
parameters: {{ key: "finalize_marker" value: {{ string_value: "{marker}" }} }}
"""

INSTALLED = {ep.name for ep in metadata.entry_points(group="modelplatform")}
PLUGINS = ",".join(p for p in ("oip-rest", "python") if p in INSTALLED)


@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("triton_repo")
    (root / "add_sub" / "1").mkdir(parents=True)
    marker = root / "finalized.txt"
    (root / "add_sub" / "config.pbtxt").write_text(CONFIG.format(marker=marker))
    (root / "add_sub" / "1" / "model.py").write_text(textwrap.dedent(MODEL_PY))
    return root


def _pair(a: list[float], b: list[float]) -> InferenceRequest:
    arrays = [np.array([a], np.float32), np.array([b], np.float32)]
    return InferenceRequest("add_sub", [Tensor.from_array(f"INPUT{i}", x) for i, x in enumerate(arrays)])


def _config(repository: Path) -> ModelConfig:
    """The same configuration as config.pbtxt, in Triton's JSON form."""
    tensors = lambda names: [{"name": n, "data_type": "TYPE_FP32", "dims": [4]} for n in names]  # noqa: E731 - a one-line helper, local to this test
    marker = str(repository / "finalized.txt")
    return ModelConfig.from_json(
        {
            "name": "add_sub",
            "backend": "python",
            "max_batch_size": 8,
            "input": tensors(["INPUT0", "INPUT1"]),
            "output": tensors(["OUTPUT0", "OUTPUT1"]),
            "parameters": {"finalize_marker": {"string_value": marker}},
        }
    )


@pytest.fixture
async def backend(repository):
    instance = PythonBackend(_config(repository), repository / "add_sub" / "1")
    await instance.load()
    yield instance
    await instance.unload()


async def test_whole_batch_reaches_execute_and_a_triton_error_fails_alone(backend):
    results = await backend.execute(
        [
            _pair([1, 2, 3, 4], [1, 1, 1, 1]),
            _pair([-1, 0, 0, 0], [0, 0, 0, 0]),
            _pair([5, 5, 5, 5], [2, 2, 2, 2]),
        ]
    )
    assert isinstance(results[0], InferenceResponse)
    np.testing.assert_allclose(results[0].output("OUTPUT0").data, [[2, 3, 4, 5]])
    assert results[0].output("REQUESTS_IN_CALL").data.tolist() == [3]
    assert isinstance(results[1], InvalidArgument)
    assert results[1].message == "INPUT0 must not be negative"
    assert isinstance(results[2], InferenceResponse)
    np.testing.assert_allclose(results[2].output("OUTPUT1").data, [[3, 3, 3, 3]])


async def test_default_triton_error_is_internal_and_exceptions_fail_the_call(backend):
    (too_large,) = await backend.execute([_pair([2000, 0, 0, 0], [0, 0, 0, 0])])
    assert isinstance(too_large, Internal) and "too large" in too_large.message
    results = await backend.execute([_pair([1, 1, 1, 1], [0, 0, 0, 0]), _pair([13, 0, 0, 0], [0, 0, 0, 0])])
    assert all(isinstance(r, ModelExecutionError) for r in results)
    assert "unlucky number" in results[0].message
    (after,) = await backend.execute([_pair([1, 1, 1, 1], [0, 0, 0, 0])])
    assert isinstance(after, InferenceResponse)  # the model keeps serving


async def test_finalize_runs_on_unload(repository):
    instance = PythonBackend(_config(repository), repository / "add_sub" / "1")
    await instance.load()
    await instance.unload()
    assert (repository / "finalized.txt").read_text() == "finalized add_sub"


def test_served_with_its_triton_config_over_oip_rest(repository):
    with ServerProcess("--model-repository", str(repository), "--plugins", PLUGINS) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.get_model_metadata("add_sub")["inputs"][0]["shape"] == [-1, 4]
        a = np.array([[1, 2, 3, 4], [4, 3, 2, 1]], np.float32)
        b = np.ones((2, 4), np.float32)
        inputs = [httpclient.InferInput(f"INPUT{i}", [2, 4], "FP32") for i in range(2)]
        inputs[0].set_data_from_numpy(a, binary_data=False)
        inputs[1].set_data_from_numpy(b, binary_data=False)
        wanted = [httpclient.InferRequestedOutput(n, binary_data=False) for n in ("OUTPUT0", "OUTPUT1")]
        result = client.infer("add_sub", inputs, outputs=wanted)
        np.testing.assert_allclose(result.as_numpy("OUTPUT0"), a + b)
        np.testing.assert_allclose(result.as_numpy("OUTPUT1"), a - b)
        body = {
            "inputs": [
                {"name": "INPUT0", "shape": [1, 4], "datatype": "FP32", "data": [-1, 0, 0, 0]},
                {"name": "INPUT1", "shape": [1, 4], "datatype": "FP32", "data": [0, 0, 0, 0]},
            ]
        }
        request = urllib.request.Request(
            f"http://{server.http_url}/v2/models/add_sub/infer", json.dumps(body).encode()
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=30)
        assert caught.value.code == 400
        assert "INPUT0 must not be negative" in json.loads(caught.value.read())["error"]
    assert "finalized add_sub" in (repository / "finalized.txt").read_text()
