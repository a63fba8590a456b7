"""SavedModels exported by TensorFlow, served by the tensorflow backend over every protocol.

Real clients: tritonclient HTTP (here) and gRPC (a child process), the
``tensorflow-serving-api`` PredictionServiceStub, TF Serving's REST API and
grps REST. The repository is conftest.py's: TF Serving's layout without
config.pbtxt, zero-padded and timestamp version folders, Triton's layout.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

HERE = Path(__file__).resolve().parent


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def _get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.loads(response.read())


def _refused(url: str, body: dict[str, Any]) -> tuple[int, str]:
    with pytest.raises(urllib.error.HTTPError) as caught:
        _post(url, body)
    return caught.value.code, caught.value.read().decode()


def _example(x: float) -> bytes:
    from modelplatform_tfserving.protos import tensorflow_pb2  # a tf.Example, serialized

    example = tensorflow_pb2.Example()
    example.features.feature["x"].float_list.value.append(x)
    return example.SerializeToString()


# ---- OIP: tritonclient ----


def test_tritonclient_http_keras_model(tf_server):
    client = httpclient.InferenceServerClient(tf_server.http_url)
    features = np.arange(8, dtype=np.float32).reshape(2, 4)
    tensor = httpclient.InferInput("features", [2, 4], "FP32")
    tensor.set_data_from_numpy(features, binary_data=True)
    result = client.infer("keras", [tensor])
    expected = np.repeat(features.sum(axis=1, keepdims=True), 2, axis=1)  # ones kernel, zero bias
    np.testing.assert_allclose(result.as_numpy("output_0"), expected)
    metadata = client.get_model_metadata("keras")
    assert metadata["platform"] == "tensorflow_savedmodel"
    assert {"name": "features", "datatype": "FP32", "shape": [-1, 4]} in metadata["inputs"]


def test_tritonclient_http_reaches_every_signature_by_name(tf_server):
    client = httpclient.InferenceServerClient(tf_server.http_url)
    x = np.ones((2, 3), np.float32)
    inputs = [
        httpclient.InferInput("affine/x", [2, 3], "FP32"),
        httpclient.InferInput("affine/bias", [2, 1], "FP32"),
    ]
    inputs[0].set_data_from_numpy(x)
    inputs[1].set_data_from_numpy(np.array([[0.5], [1.5]], np.float32))
    result = client.infer("multi", inputs, model_version="42")
    np.testing.assert_allclose(result.as_numpy("affine/sum"), [[3.5], [4.5]])
    assert result.as_numpy("affine/count").tolist() == [[3], [3]]
    assert result.get_response()["model_version"] == "42"


def test_tritonclient_grpc_multi_signature_default(tf_server):
    command = [
        sys.executable,
        str(HERE / "triton_grpc_client.py"),
        tf_server.grpc_url,
        "multi",
        "x",
        "[1, 3]",
        "[1, 2, 3]",
    ]
    answer = json.loads(
        subprocess.run(command, capture_output=True, text=True, check=True, timeout=60).stdout
    )
    assert answer == {
        "platform": "tensorflow_savedmodel",
        "version": "42",
        "outputs": {"y": [[2.0, 4.0, 6.0]]},
    }


def test_signatures_do_not_mix_and_the_model_keeps_serving(tf_server):
    url = f"http://{tf_server.http_url}/v2/models/multi/infer"
    x = {"name": "x", "shape": [1, 3], "datatype": "FP32", "data": [1, 2, 3]}
    affine_x = {**x, "name": "affine/x"}
    status, body = _refused(url, {"inputs": [x, affine_x]})
    assert status == 400
    assert "belong to different signatures" in body
    status, body = _refused(url, {"inputs": [affine_x]})
    assert status == 400
    assert "signature 'affine' needs input(s) ['bias']" in body
    status, body = _refused(url, {"inputs": [x], "outputs": [{"name": "affine/sum"}]})
    assert status == 400
    assert "['affine/sum'] are not outputs of signature 'serving_default'" in body
    assert _post(url, {"inputs": [x]})["outputs"][0]["data"] == [2.0, 4.0, 6.0]


def test_triton_layout_with_a_chosen_signature(tf_server):
    metadata = _get(f"http://{tf_server.http_url}/v2/models/affine_only")
    names = {i["name"] for i in metadata["inputs"]}
    assert names == {
        "x",
        "bias",
        "serving_default/x",
        "parse_examples/examples",
    }  # affine's aliases unprefixed
    body = {
        "inputs": [
            {"name": "x", "shape": [1, 3], "datatype": "FP32", "data": [1, 1, 1]},
            {"name": "bias", "shape": [1, 1], "datatype": "FP32", "data": [2]},
        ],
        "outputs": [{"name": "sum"}],
    }
    answer = _post(f"http://{tf_server.http_url}/v2/models/affine_only/infer", body)
    assert [(o["name"], o["data"]) for o in answer["outputs"]] == [("sum", [5.0])]


def test_the_graph_tag_parameter_chooses_the_meta_graph(tf_server):
    body = {"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "data": [1, 2]}]}
    doubled = _post(f"http://{tf_server.http_url}/v2/models/doubled/infer", body)
    tripled = _post(f"http://{tf_server.http_url}/v2/models/tripled/infer", body)
    assert (doubled["outputs"][0]["data"], tripled["outputs"][0]["data"]) == ([2.0, 4.0], [3.0, 6.0])


def test_dynamic_batching_joins_concurrent_requests(tf_server):
    rows = np.random.default_rng(1).standard_normal((48, 64)).astype(np.float32)
    url = f"http://{tf_server.http_url}/v2/models/mlp/infer"

    def one(index: int) -> list[float]:
        tensor = {"name": "INPUT0", "shape": [1, 64], "datatype": "FP32", "data": rows[index].tolist()}
        return _post(url, {"inputs": [tensor]})["outputs"][0]["data"]

    alone = one(5)
    with ThreadPoolExecutor(16) as pool:  # (tritonclient.http's gevent client keeps to one thread)
        together = list(pool.map(one, range(48)))
    np.testing.assert_allclose(together[5], alone, rtol=1e-5, atol=1e-6)
    client = httpclient.InferenceServerClient(tf_server.http_url)
    too_many = httpclient.InferInput("INPUT0", [65, 64], "FP32")
    too_many.set_data_from_numpy(np.zeros((65, 64), np.float32))
    with pytest.raises(InferenceServerException) as caught:
        client.infer("mlp", [too_many])
    assert "64" in caught.value.message()  # max_batch_size, from config.pbtxt
    stats = client.get_inference_statistics("mlp")["model_stats"][0]
    assert stats["inference_count"] >= 49
    assert stats["execution_count"] < stats["inference_count"]  # some calls ran several requests


# ---- TF Serving REST ----


def test_tfserving_rest_predict_by_signature_name(tf_server):
    base = f"http://{tf_server.http_url}/v1/models/multi"
    assert _post(f"{base}:predict", {"instances": [[1, 2, 3]]}) == {"predictions": [[2.0, 4.0, 6.0]]}
    body = {"signature_name": "affine", "instances": [{"x": [1, 2, 3], "bias": [0.5]}]}
    assert _post(f"{base}/versions/42:predict", body) == {"predictions": [{"count": [3], "sum": [6.5]}]}
    status, text = _refused(f"{base}:predict", {"signature_name": "nope", "instances": [[1, 2, 3]]})
    assert status == 400
    assert json.loads(text) == {"error": 'Serving signature name: "nope" not found in signature def'}


def test_tfserving_rest_tf_example_input(tf_server):
    examples = [{"b64": base64.b64encode(_example(x)).decode()} for x in (4.0, 0.5)]
    body = {"signature_name": "parse_examples", "instances": examples}
    answer = _post(f"http://{tf_server.http_url}/v1/models/multi:predict", body)
    assert answer == {"predictions": [[40.0], [5.0]]}


def test_tfserving_rest_half_plus_two(tf_server):
    base = f"http://{tf_server.http_url}/v1/models/half_plus_two"
    assert _post(f"{base}:predict", {"instances": [1.0, 2.0, 5.0]}) == {"predictions": [2.5, 3.0, 4.5]}
    classify = {"signature_name": "classify_x_to_y", "examples": [{"x": 1.0}, {"x": 3.0}]}
    assert _post(f"{base}:classify", classify) == {"results": [[["", 2.5]], [["", 3.5]]]}
    regress = {"signature_name": "regress_x_to_y", "context": {"x": 2.0}, "examples": [{}, {"x": 4.0}]}
    assert _post(f"{base}:regress", regress) == {"results": [3.0, 4.0]}


def test_tfserving_rest_classify_and_regress(tf_server):
    url = f"http://{tf_server.http_url}/v1/models"
    answer = _post(f"{url}/classifier:classify", {"examples": [{"x": 0.25}]})
    assert answer == {"results": [[["pos", 0.25], ["neg", 0.75]]]}
    assert _post(f"{url}/regress/versions/1700000000:regress", {"examples": [{"x": 2.0}]}) == {
        "results": [7.0]
    }
    status, text = _refused(f"{url}/classifier:regress", {"examples": [{"x": 0.25}]})
    assert status == 400
    assert "Expected regression signature method_name" in text


def test_tfserving_rest_metadata_is_the_saved_models(tf_server):
    doc = _get(f"http://{tf_server.http_url}/v1/models/multi/metadata")
    assert doc["model_spec"] == {"name": "multi", "signature_name": "", "version": "42"}
    defs = doc["metadata"]["signature_def"]["signature_def"]
    assert sorted(defs) == ["__saved_model_init_op", "affine", "parse_examples", "serving_default"]
    x = defs["affine"]["inputs"]["x"]
    assert x["name"] == "affine_x:0"  # the graph's tensor, as TF Serving answers
    assert x["dtype"] == "DT_FLOAT"
    assert x["tensor_shape"] == {
        "dim": [{"size": "-1", "name": ""}, {"size": "3", "name": ""}],
        "unknown_rank": False,
    }
    assert defs["affine"]["method_name"] == "tensorflow/serving/predict"
    half = _get(f"http://{tf_server.http_url}/v1/models/half_plus_two/metadata")
    signature = half["metadata"]["signature_def"]["signature_def"]["classify_x_to_y"]
    assert signature["method_name"] == "tensorflow/serving/classify"
    assert signature["inputs"]["inputs"]["tensor_shape"]["unknown_rank"] is True


def test_tfserving_rest_status_of_a_timestamp_version(tf_server):
    doc = _get(f"http://{tf_server.http_url}/v1/models/regress")
    assert [(s["version"], s["state"]) for s in doc["model_version_status"]] == [("1700000000", "AVAILABLE")]


# ---- grps ----


def test_grps_rest_keras_model(tf_server):
    tensors = [{"name": "features", "dtype": "DT_FLOAT32", "shape": [1, 4], "flat_float32": [1, 2, 3, 4]}]
    answer = _post(
        f"http://{tf_server.http_url}/grps/v1/infer/predict",
        {"model": "keras-1", "gtensors": {"tensors": tensors}},
    )
    out = {t["name"]: t for t in answer["gtensors"]["tensors"]}["output_0"]
    assert out["flat_float32"] == [10.0, 10.0]


# ---- TF Serving gRPC: the tensorflow-serving-api client ----


@pytest.fixture(scope="module")
def tfs() -> Any:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    pytest.importorskip("tensorflow_serving.apis", reason="tensorflow-serving-api is not installed")
    import tensorflow as tf
    from tensorflow_serving.apis import (
        classification_pb2,
        get_model_metadata_pb2,
        predict_pb2,
        prediction_service_pb2_grpc,
        regression_pb2,
    )

    class Apis:
        pass

    apis = Apis()
    for module in (classification_pb2, get_model_metadata_pb2, predict_pb2, regression_pb2):
        apis.__dict__.update(vars(module))
    apis.tf, apis.services = tf, prediction_service_pb2_grpc
    return apis


@pytest.fixture
def stub(tf_server, tfs) -> Any:
    import grpc

    with grpc.insecure_channel(tf_server.grpc_url) as channel:
        yield tfs.services.PredictionServiceStub(channel)


def test_tensorflow_serving_api_predict(stub, tfs):
    request = tfs.PredictRequest()
    request.model_spec.name, request.model_spec.signature_name = "multi", "affine"
    request.inputs["x"].CopyFrom(tfs.tf.make_tensor_proto(np.ones((2, 3), np.float32)))
    request.inputs["bias"].CopyFrom(tfs.tf.make_tensor_proto(np.array([[0.5], [1.0]], np.float32)))
    reply = stub.Predict(request, timeout=60)
    np.testing.assert_allclose(tfs.tf.make_ndarray(reply.outputs["sum"]), [[3.5], [4.0]])
    assert tfs.tf.make_ndarray(reply.outputs["count"]).dtype == np.int64
    assert (reply.model_spec.name, reply.model_spec.version.value) == ("multi", 42)
    assert reply.model_spec.signature_name == "affine"


def test_tensorflow_serving_api_metadata(stub, tfs):
    request = tfs.GetModelMetadataRequest()
    request.model_spec.name = "half_plus_two"
    request.metadata_field.append("signature_def")
    reply = stub.GetModelMetadata(request, timeout=60)
    signature_defs = tfs.SignatureDefMap()
    assert reply.metadata["signature_def"].Unpack(signature_defs)
    defs = signature_defs.signature_def
    assert sorted(defs) == ["classify_x_to_y", "regress_x_to_y", "serving_default"]
    assert defs["serving_default"].inputs["x"].name == "x:0"
    assert defs["regress_x_to_y"].method_name == "tensorflow/serving/regress"
    assert defs["regress_x_to_y"].inputs["inputs"].dtype == tfs.tf.string.as_datatype_enum


def test_tensorflow_serving_api_classify_and_regress(stub, tfs):
    classify = tfs.ClassificationRequest()
    classify.model_spec.name = "classifier"
    classify.input.example_list.examples.add().features.feature["x"].float_list.value.append(0.25)
    classes = stub.Classify(classify, timeout=60).result.classifications[0].classes
    assert [(c.label, c.score) for c in classes] == [("pos", 0.25), ("neg", 0.75)]
    regress = tfs.RegressionRequest()
    regress.model_spec.name = "regress"
    regress.model_spec.version.value = 1700000000
    listed = regress.input.example_list_with_context
    listed.context.features.feature["x"].float_list.value.append(1.0)
    listed.examples.add()
    listed.examples.add().features.feature["x"].float_list.value.append(5.0)
    reply = stub.Regress(regress, timeout=60)
    assert [r.value for r in reply.result.regressions] == [4.0, 16.0]
