"""tensorflow.serving.PredictionService / ModelService with stubs generated from our protos."""

from __future__ import annotations

import grpc
import numpy as np
import pytest

from modelplatform_tfserving.protos import services_pb2_grpc as services
from modelplatform_tfserving.protos import serving_apis_pb2 as apis
from modelplatform_tfserving.protos import tensorflow_pb2 as tf

from .conftest import HALF


@pytest.fixture(scope="module")
def channel(tf_server):
    options = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
    with grpc.insecure_channel(tf_server.grpc_url, options=options) as open_channel:
        yield open_channel


@pytest.fixture(scope="module")
def predictions(channel) -> services.PredictionServiceStub:
    return services.PredictionServiceStub(channel)


def tensor(array: np.ndarray, dtype: int) -> tf.TensorProto:
    proto = tf.TensorProto(dtype=dtype, tensor_content=array.tobytes())
    proto.tensor_shape.dim.extend(tf.TensorShapeProto.Dim(size=d) for d in array.shape)
    return proto


def values(proto: tf.TensorProto) -> np.ndarray:
    return np.frombuffer(proto.tensor_content, dtype=np.float32).reshape(
        [d.size for d in proto.tensor_shape.dim]
    )


def example(**features: float) -> tf.Example:
    out = tf.Example()
    for name, value in features.items():
        out.features.feature[name].float_list.value.append(value)
    return out


def test_predict_with_tensor_content(predictions) -> None:
    request = apis.PredictRequest(model_spec=apis.ModelSpec(name=HALF))
    request.inputs["x"].CopyFrom(tensor(np.array([1.0, 2.0, 5.0], dtype=np.float32), tf.DT_FLOAT))
    response = predictions.Predict(request)
    assert values(response.outputs["y"]).tolist() == [3.5, 4.0, 5.5]
    assert (response.model_spec.name, response.model_spec.version.value) == (HALF, 123)
    assert response.model_spec.signature_name == "serving_default"


def test_predict_with_typed_values_and_label(predictions) -> None:
    request = apis.PredictRequest(model_spec=apis.ModelSpec(name=HALF, version_label="stable"))
    proto = request.inputs["x"]
    proto.dtype = tf.DT_FLOAT
    proto.tensor_shape.dim.add(size=2)
    proto.float_val.extend([4.0, 6.0])
    response = predictions.Predict(request)
    assert values(response.outputs["y"]).tolist() == [5.0, 6.0]


def test_predict_strings_and_output_filter(predictions) -> None:
    request = apis.PredictRequest(
        model_spec=apis.ModelSpec(name="echo", signature_name="pair"), output_filter=["b"]
    )
    request.inputs["a"].CopyFrom(tensor(np.array([1.0], dtype=np.float32), tf.DT_FLOAT))
    request.inputs["b"].CopyFrom(tensor(np.array([7, 8], dtype=np.int64), tf.DT_INT64))
    response = predictions.Predict(request)
    assert list(response.outputs) == ["b"]
    assert np.frombuffer(response.outputs["b"].tensor_content, dtype=np.int64).tolist() == [7, 8]
    text = apis.PredictRequest(model_spec=apis.ModelSpec(name="identity_bytes"))
    text.inputs["INPUT0"].dtype = tf.DT_STRING
    text.inputs["INPUT0"].tensor_shape.dim.add(size=2)
    text.inputs["INPUT0"].string_val.extend([b"a\x00b", b"\xff"])
    assert list(predictions.Predict(text).outputs["OUTPUT0"].string_val) == [b"a\x00b", b"\xff"]


def test_predict_large_tensor(predictions) -> None:
    big = np.arange(3 * 1024 * 1024, dtype=np.float32)  # 12 MiB, over grpc's 4 MiB default
    request = apis.PredictRequest(model_spec=apis.ModelSpec(name="identity_fp32"))
    request.inputs["INPUT0"].CopyFrom(tensor(big, tf.DT_FLOAT))
    out = values(predictions.Predict(request).outputs["OUTPUT0"])
    assert out.shape == big.shape and out[-1] == big[-1]


@pytest.mark.parametrize(
    ("spec", "dtype", "code", "message"),
    [
        (
            apis.ModelSpec(name="half"),
            tf.DT_FLOAT,
            grpc.StatusCode.NOT_FOUND,
            "Servable not found for request: Latest(half)",
        ),
        (
            apis.ModelSpec(name=HALF, signature_name="nope"),
            tf.DT_FLOAT,
            grpc.StatusCode.INVALID_ARGUMENT,
            'Serving signature name: "nope" not found in signature def',
        ),
        (
            apis.ModelSpec(name=HALF, version_label="nope"),
            tf.DT_FLOAT,
            grpc.StatusCode.INVALID_ARGUMENT,
            "Unrecognized servable version label: nope",
        ),
        (
            apis.ModelSpec(name=HALF),
            tf.DT_INT32,
            grpc.StatusCode.INVALID_ARGUMENT,
            "Expects arg[0] to be FP32 but INT32 is provided",
        ),
    ],
)
def test_predict_errors(predictions, spec, dtype: int, code, message: str) -> None:
    request = apis.PredictRequest(model_spec=spec)
    request.inputs["x"].CopyFrom(
        tensor(np.array([1, 2], dtype=np.float32 if dtype == tf.DT_FLOAT else np.int32), dtype)
    )
    with pytest.raises(grpc.RpcError) as raised:
        predictions.Predict(request)
    assert (raised.value.code(), raised.value.details()) == (code, message)


def test_regress_and_classify(predictions) -> None:
    regress = apis.RegressionRequest(
        model_spec=apis.ModelSpec(name=HALF, signature_name="tensorflow/serving/regress")
    )
    regress.input.example_list.examples.extend([example(x=1.0), example(x=2.0)])
    result = predictions.Regress(regress)
    assert [r.value for r in result.result.regressions] == [3.5, 4.0]
    assert result.model_spec.signature_name == "tensorflow/serving/regress"
    classify = apis.ClassificationRequest(model_spec=apis.ModelSpec(name="classifier"))
    listed = classify.input.example_list_with_context
    listed.context.CopyFrom(example(x=0.25))
    listed.examples.add()
    classes = predictions.Classify(classify).result.classifications[0].classes
    assert [(c.label, c.score) for c in classes] == [("pos", 0.5), ("neg", 0.5)]


def test_regress_without_examples_is_invalid(predictions) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        predictions.Regress(apis.RegressionRequest(model_spec=apis.ModelSpec(name=HALF)))
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_model_metadata_packs_signature_def_map(predictions) -> None:
    request = apis.GetModelMetadataRequest(
        model_spec=apis.ModelSpec(name=HALF), metadata_field=["signature_def"]
    )
    response = predictions.GetModelMetadata(request)
    packed = response.metadata["signature_def"]
    assert packed.type_url == "type.googleapis.com/tensorflow.serving.SignatureDefMap"
    signatures = apis.SignatureDefMap()
    packed.Unpack(signatures)
    regress = signatures.signature_def["tensorflow/serving/regress"]
    assert regress.method_name == "tensorflow/serving/regress"
    assert (regress.inputs["inputs"].name, regress.inputs["inputs"].dtype) == ("x", tf.DT_FLOAT)
    assert [d.size for d in regress.inputs["inputs"].tensor_shape.dim] == [-1]
    assert response.model_spec.version.value == 123
    with pytest.raises(grpc.RpcError) as raised:
        predictions.GetModelMetadata(apis.GetModelMetadataRequest(model_spec=apis.ModelSpec(name=HALF)))
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_model_status(channel) -> None:
    stub = services.ModelServiceStub(channel)
    response = stub.GetModelStatus(apis.GetModelStatusRequest(model_spec=apis.ModelSpec(name="classifier")))
    assert [(s.version, s.state) for s in response.model_version_status] == [
        (2, apis.ModelVersionStatus.AVAILABLE),
        (1, apis.ModelVersionStatus.AVAILABLE),
    ]
    with pytest.raises(grpc.RpcError) as raised:
        stub.GetModelStatus(apis.GetModelStatusRequest(model_spec=apis.ModelSpec(name="nope")))
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND


def test_unimplemented_methods(channel, predictions) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        predictions.MultiInference(apis.MultiInferenceRequest())
    assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED
    with pytest.raises(grpc.RpcError) as raised:
        services.ModelServiceStub(channel).HandleReloadConfigRequest(apis.ReloadConfigRequest())
    assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED
