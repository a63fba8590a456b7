"""simple_onnx served from the bundled repository answers over every installed protocol."""

from __future__ import annotations

import json
import shutil
import urllib.request
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient

from modelplatform.testing import ServerProcess

MODEL = "simple_onnx"
REPOSITORY = Path(__file__).resolve().parents[3] / "model_repository"
INSTALLED = {ep.name for ep in metadata.entry_points(group="modelplatform")}


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    a = np.arange(32, dtype=np.float32).reshape(2, 16) / 4
    return a, np.full((2, 16), 1.5, np.float32)


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_oip_rest_tritonclient(server):
    a, b = _inputs()
    client = httpclient.InferenceServerClient(server.http_url)
    inputs = [
        httpclient.InferInput("INPUT0", [2, 16], "FP32"),
        httpclient.InferInput("INPUT1", [2, 16], "FP32"),
    ]
    inputs[0].set_data_from_numpy(a, binary_data=False)
    inputs[1].set_data_from_numpy(b, binary_data=False)
    outputs = [httpclient.InferRequestedOutput(n, binary_data=False) for n in ("OUTPUT0", "OUTPUT1")]
    result = client.infer(MODEL, inputs, outputs=outputs)
    np.testing.assert_allclose(result.as_numpy("OUTPUT0"), a + b)
    np.testing.assert_allclose(result.as_numpy("OUTPUT1"), a - b)
    metadata_ = client.get_model_metadata(MODEL)
    assert metadata_["platform"] == "onnxruntime_onnx"
    assert metadata_["inputs"][0]["shape"] == [-1, 16]


def test_oip_rest_wrong_datatype_is_a_clean_400(server):
    body = {
        "inputs": [
            {"name": n, "shape": [1, 16], "datatype": "INT32", "data": [1] * 16} for n in ("INPUT0", "INPUT1")
        ]
    }
    with pytest.raises(urllib.error.HTTPError) as caught:
        _post(f"http://{server.http_url}/v2/models/{MODEL}/infer", body)
    assert caught.value.code == 400
    assert "FP32" in json.loads(caught.value.read())["error"]


@pytest.mark.skipif("oip-grpc" not in INSTALLED, reason="oip-grpc plugin is not installed")
def test_oip_grpc_raw_contents(server):
    # tritonclient.grpc cannot share a process with modelplatform (both register
    # the protobuf package `inference`), so this speaks through our own stubs.
    grpc = pytest.importorskip("grpc")
    from modelplatform_oip.protos import grpc_service_pb2 as pb
    from modelplatform_oip.protos import grpc_service_pb2_grpc as rpc

    a, b = _inputs()
    request = pb.ModelInferRequest(model_name=MODEL)
    for name, array in (("INPUT0", a), ("INPUT1", b)):
        request.inputs.add(name=name, datatype="FP32", shape=list(array.shape))
        request.raw_input_contents.append(array.tobytes())
    with grpc.insecure_channel(server.grpc_url) as channel:
        reply = rpc.GRPCInferenceServiceStub(channel).ModelInfer(request, timeout=30)
    outputs = {o.name: i for i, o in enumerate(reply.outputs)}
    out1 = np.frombuffer(reply.raw_output_contents[outputs["OUTPUT1"]], np.float32).reshape(2, 16)
    np.testing.assert_allclose(out1, a - b)


@pytest.mark.skipif("tfserving-rest" not in INSTALLED, reason="tfserving-rest plugin is not installed")
def test_tfserving_rest_predict(server):
    a, b = _inputs()
    body = {"inputs": {"INPUT0": a.tolist(), "INPUT1": b.tolist()}}
    answer = _post(f"http://{server.http_url}/v1/models/{MODEL}:predict", body)
    np.testing.assert_allclose(np.array(answer["outputs"]["OUTPUT0"]), a + b)


@pytest.mark.skipif("grps-rest" not in INSTALLED, reason="grps-rest plugin is not installed")
def test_grps_rest_gtensors(server):
    a, b = _inputs()
    tensors = [
        {"name": name, "dtype": "DT_FLOAT32", "shape": [2, 16], "flat_float32": array.ravel().tolist()}
        for name, array in (("INPUT0", a), ("INPUT1", b))
    ]
    answer = _post(
        f"http://{server.http_url}/grps/v1/infer/predict",
        {"model": f"{MODEL}-1", "gtensors": {"tensors": tensors}},
    )
    by_name = {t["name"]: t for t in answer["gtensors"]["tensors"]}
    np.testing.assert_allclose(np.array(by_name["OUTPUT1"]["flat_float32"]).reshape(2, 16), a - b)


@pytest.mark.skipif("tfserving-grpc" not in INSTALLED, reason="tfserving-grpc plugin is not installed")
def test_tfserving_grpc_predict(server):
    grpc = pytest.importorskip("grpc")
    from modelplatform_tfserving.protos import services_pb2_grpc as services
    from modelplatform_tfserving.protos import serving_apis_pb2 as apis
    from modelplatform_tfserving.protos import tensorflow_pb2 as tf

    a, b = _inputs()
    request = apis.PredictRequest(model_spec=apis.ModelSpec(name=MODEL))
    for name, array in (("INPUT0", a), ("INPUT1", b)):
        proto = request.inputs[name]
        proto.dtype, proto.tensor_content = tf.DT_FLOAT, array.tobytes()
        proto.tensor_shape.dim.add(size=2)
        proto.tensor_shape.dim.add(size=16)
    with grpc.insecure_channel(server.grpc_url) as channel:
        reply = services.PredictionServiceStub(channel).Predict(request, timeout=30)
    out = reply.outputs["OUTPUT1"]
    np.testing.assert_allclose(np.frombuffer(out.tensor_content, np.float32).reshape(2, 16), a - b)


@pytest.mark.skipif("grps-grpc" not in INSTALLED, reason="grps-grpc plugin is not installed")
def test_grps_grpc_gtensors(server):
    grpc = pytest.importorskip("grpc")
    from modelplatform_grps.protos import grps_pb2, grps_pb2_grpc

    a, b = _inputs()
    message = grps_pb2.GrpsMessage(model=f"{MODEL}-1")
    for name, array in (("INPUT0", a), ("INPUT1", b)):
        message.gtensors.tensors.add(name=name, dtype=grps_pb2.DT_FLOAT32, shape=[2, 16],
                                     flat_float32=array.ravel().tolist())  # fmt: skip
    with grpc.insecure_channel(server.grpc_url) as channel:
        reply = grps_pb2_grpc.GrpsServiceStub(channel).Predict(message, timeout=30)
    assert reply.status.status == grps_pb2.Status.SUCCESS
    by_name = {t.name: t for t in reply.gtensors.tensors}
    np.testing.assert_allclose(np.array(by_name["OUTPUT0"].flat_float32).reshape(2, 16), a + b)


def test_served_config_is_completed_from_the_graph(tmp_path):
    (tmp_path / "auto_onnx" / "1").mkdir(parents=True)
    shutil.copy(REPOSITORY / "simple_onnx" / "1" / "model.onnx", tmp_path / "auto_onnx" / "1")
    (tmp_path / "auto_onnx" / "config.pbtxt").write_text('platform: "onnxruntime_onnx"\n')
    plugins = ",".join(p for p in ("oip-rest", "onnxruntime") if p in INSTALLED)
    with ServerProcess("--model-repository", str(tmp_path), "--plugins", plugins) as served:
        with urllib.request.urlopen(
            f"http://{served.http_url}/v2/models/auto_onnx/config", timeout=30
        ) as reply:
            config = json.loads(reply.read())
    assert config["max_batch_size"] == 4
    assert [(t["name"], t["data_type"], t["dims"]) for t in config["input"]] == [
        ("INPUT0", "TYPE_FP32", [16]),
        ("INPUT1", "TYPE_FP32", [16]),
    ]
