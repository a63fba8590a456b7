"""TF Serving edge cases answered as TF Serving answers them (issue 14, point 4)."""

from __future__ import annotations

import grpc
import pytest

from modelplatform_tfserving.protos import services_pb2_grpc as services
from modelplatform_tfserving.protos import serving_apis_pb2 as apis
from modelplatform_tfserving.protos import tensorflow_pb2 as tf

from .conftest import HALF
from .http import post


@pytest.fixture(scope="module")
def predictions(tf_server):
    with grpc.insecure_channel(tf_server.grpc_url) as channel:
        yield services.PredictionServiceStub(channel)


def _predict(predictions, dtype: int) -> grpc.RpcError:
    request = apis.PredictRequest(model_spec=apis.ModelSpec(name=HALF))
    proto = request.inputs["x"]
    proto.dtype = dtype  # type: ignore[assignment]  # any int, valid or not, is what the test sends
    proto.tensor_shape.dim.add(size=1)
    proto.float_val.append(1.0)
    with pytest.raises(grpc.RpcError) as raised:
        predictions.Predict(request)
    return raised.value


@pytest.mark.parametrize("dtype", [tf.DT_INVALID, 9999])
def test_a_tensor_tensorflow_cannot_parse_is_invalid_argument(predictions, dtype) -> None:
    """TF Serving: Tensor::FromProto fails -> INVALID_ARGUMENT "tensor parsing error: <alias>"."""
    error = _predict(predictions, dtype)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error.details() == "tensor parsing error: x"


def test_a_tensorflow_type_we_do_not_serve_stays_unimplemented(predictions) -> None:
    error = _predict(predictions, tf.DT_COMPLEX64)
    assert error.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "DT_COMPLEX64" in error.details()


def test_regress_feature_in_context_and_example_keeps_the_examples(tf_server) -> None:
    """TF Serving concatenates the serialized context and example, and TensorFlow's parser keeps
    the last occurrence of a feature ("Data loss! ... Ignoring all but last one"): a 200 in
    which the example's own value wins, never a refusal."""
    doc = {
        "signature_name": "tensorflow/serving/regress",
        "context": {"x": 100.0},
        "examples": [{"x": 1.0}, {}],
    }
    reply = post(tf_server.http_url, f"/v1/models/{HALF}:regress", doc)
    assert reply.status == 200, reply.text
    assert reply.json() == {"results": [3.5, 53.0]}
