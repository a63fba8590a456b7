"""``auto_complete_config`` of a Triton python model (issue 29 point 5), with a real server and clients.

The models declare what config.pbtxt leaves out in ``auto_complete_config``,
as vllm_backend's model.py and many user models do. The completed
configuration is what the config endpoint answers over HTTP and gRPC, what
requests are checked against and how they are batched; a model whose
completion breaks Triton's rules fails its load with the reason;
``--disable-auto-complete-config`` leaves config.pbtxt as written.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from modelplatform.testing import ServerProcess

from ..repository.helpers import grpc_client, index

COMPLETING = """
import json
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        declared = {i["name"] for i in auto_complete_model_config.as_dict()["input"]}
        for name in ("INPUT0", "INPUT1"):
            if name not in declared:
                auto_complete_model_config.add_input({"name": name, "data_type": "TYPE_FP32", "dims": [4]})
        auto_complete_model_config.add_output({"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]})
        auto_complete_model_config.add_output({"name": "SEEN", "data_type": "TYPE_STRING", "dims": [1]})
        auto_complete_model_config.set_max_batch_size(8)
        auto_complete_model_config.set_dynamic_batching()
        return auto_complete_model_config

    def initialize(self, args):
        self.seen = json.dumps(json.loads(args["model_config"])["max_batch_size"])
        marker = f"{args['model_repository']}/initialized-{args['model_instance_name']}"
        with open(marker, "w") as handle:
            handle.write(args["model_config"])

    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            seen = np.array([[self.seen.encode()]] * a.shape[0], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUTPUT0", a + b), pb_utils.Tensor("SEEN", seen)]))
        return responses
"""

#: config.pbtxt of the completing model: one input already declared (restated alike: allowed).
COMPLETING_CONFIG = """
backend: "python"
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { kind: KIND_CPU count: 2 } ]
"""

CONFLICTING = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        config.add_input({"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [4]})
        return config

    def execute(self, requests):
        return []
"""

RETURNS_NOTHING = """
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        config.set_max_batch_size(4)

    def execute(self, requests):
        return []
"""

SMALLER_BATCH = """
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        config.set_max_batch_size(2)
        return config

    def execute(self, requests):
        return []
"""

DECOUPLED = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        config.add_input({"name": "IN", "data_type": "TYPE_INT32", "dims": [1]})
        config.add_output({"name": "OUT", "data_type": "TYPE_INT32", "dims": [1]})
        config.set_model_transaction_policy({"decoupled": True})
        return config

    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            value = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            for step in range(3):
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", value + step)]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""


def _write(root: Path, name: str, model: str, config: str = 'backend: "python"\n') -> None:
    (root / name / "1").mkdir(parents=True)
    (root / name / "config.pbtxt").write_text(config)
    (root / name / "1" / "model.py").write_text(textwrap.dedent(model))


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("auto_complete")
    _write(root, "completing", COMPLETING, COMPLETING_CONFIG)
    _write(root, "conflicting", CONFLICTING, COMPLETING_CONFIG)
    _write(root, "returns_nothing", RETURNS_NOTHING)
    _write(root, "smaller_batch", SMALLER_BATCH, 'backend: "python"\nmax_batch_size: 4\n')
    _write(root, "decoupled", DECOUPLED)
    return root


@pytest.fixture(scope="module")
def server(repository: Path) -> Iterator[ServerProcess]:
    with ServerProcess("--model-repository", str(repository)) as process:
        yield process


def _inputs(rows: int) -> list[httpclient.InferInput]:
    tensors = [httpclient.InferInput(name, [rows, 4], "FP32") for name in ("INPUT0", "INPUT1")]
    for tensor in tensors:
        tensor.set_data_from_numpy(np.arange(rows * 4, dtype=np.float32).reshape(rows, 4))
    return tensors


def test_the_config_endpoint_shows_the_completed_config_over_http(server: ServerProcess) -> None:
    with httpclient.InferenceServerClient(server.http_url) as client:
        config = client.get_model_config("completing")
        metadata = client.get_model_metadata("completing")
    assert [i["name"] for i in config["input"]] == ["INPUT0", "INPUT1"]
    assert [(o["name"], o["data_type"], o["dims"]) for o in config["output"]] == [
        ("OUTPUT0", "TYPE_FP32", [4]),
        ("SEEN", "TYPE_STRING", [1]),
    ]
    assert config["max_batch_size"] == 8
    # set_dynamic_batching(): Triton then fills preferred_batch_size with max_batch_size.
    assert config["dynamic_batching"]["preferred_batch_size"] == [8]
    assert [i["shape"] for i in metadata["inputs"]] == [[-1, 4], [-1, 4]]


def test_the_grpc_model_config_shows_it_too(server: ServerProcess) -> None:
    result = grpc_client(
        server.grpc_url,
        """
        config = client.get_model_config("completing", as_json=True)["config"]
        result = [config["max_batch_size"], [o["name"] for o in config["output"]],
                  "dynamic_batching" in config, config["input"][1]["data_type"]]
    """,
    )
    assert result == [8, ["OUTPUT0", "SEEN"], True, "TYPE_FP32"]


def test_requests_are_served_and_every_instance_gets_the_completed_config(
    server: ServerProcess, repository: Path
) -> None:
    initialized = sorted((repository / "completing").glob("initialized-*"))
    assert len(initialized) == 2  # instance_group count 2: each one's initialize(args)
    for marker in initialized:
        config = json.loads(marker.read_text())
        assert (config["max_batch_size"], len(config["input"]), len(config["output"])) == (8, 2, 2)
    with httpclient.InferenceServerClient(server.http_url) as client:
        for _ in range(4):  # two instances: both are asked
            result = client.infer("completing", _inputs(3))
            np.testing.assert_allclose(result.as_numpy("OUTPUT0"), 2 * np.arange(12).reshape(3, 4))
            assert result.as_numpy("SEEN").ravel().tolist() == [b"8", b"8", b"8"]
        with pytest.raises(InferenceServerException) as refused:
            client.infer("completing", _inputs(9))  # over the completed max_batch_size
        assert "8" in refused.value.message()


def test_a_completion_that_breaks_tritons_rules_fails_the_load_with_the_reason(server: ServerProcess) -> None:
    entries = index(server.http_url)
    assert entries["completing"]["state"] == "READY"
    conflicting = entries["conflicting"]
    assert conflicting["state"] == "UNAVAILABLE"
    assert (
        "configuration expects datatype TYPE_FP32 for input 'INPUT0', model provides TYPE_INT32"
        in (conflicting["reason"])
    )
    nothing = entries["returns_nothing"]
    assert nothing["state"] == "UNAVAILABLE"
    assert "must return a valid pb.ModelConfig object" in nothing["reason"]
    smaller = entries["smaller_batch"]
    assert smaller["state"] == "UNAVAILABLE"
    assert "configuration specified max_batch_size 4" in smaller["reason"]


def test_set_model_transaction_policy_makes_the_model_decoupled(server: ServerProcess) -> None:
    with httpclient.InferenceServerClient(server.http_url) as client:
        config = client.get_model_config("decoupled")
    assert config["model_transaction_policy"] == {"decoupled": True}
    result = grpc_client(
        server.grpc_url,
        """
        import queue
        import numpy as np
        answers = queue.Queue()
        client.start_stream(callback=lambda result, error: answers.put(error or result))
        tensor = grpcclient.InferInput("IN", [1], "INT32")
        tensor.set_data_from_numpy(np.array([10], dtype=np.int32))
        client.async_stream_infer("decoupled", [tensor])
        result = [int(answers.get(timeout=30).as_numpy("OUT")[0]) for _ in range(3)]
        client.stop_stream()
    """,
    )
    assert result == [10, 11, 12]


def test_disable_auto_complete_config_leaves_the_config_as_written(repository: Path) -> None:
    with ServerProcess("--model-repository", str(repository), "--disable-auto-complete-config") as server:
        with httpclient.InferenceServerClient(server.http_url) as client:
            config = client.get_model_config("completing")
            assert [i["name"] for i in config["input"]] == ["INPUT0"]
            assert config.get("output", []) == [] and config.get("max_batch_size", 0) == 0
            assert "dynamic_batching" not in config
        entries = index(server.http_url)
        assert entries["conflicting"]["state"] == "READY"  # its completion never ran
        body = json.dumps({"inputs": [
            {"name": n, "shape": [4], "datatype": "FP32", "data": [1, 2, 3, 4]} for n in ("INPUT0", "INPUT1")
        ]}).encode()  # fmt: skip
        from ..repository.helpers import post

        status, error = post(server.http_url, "/v2/models/completing/infer", body)
        assert status == 400 and "INPUT1" in error["error"]
