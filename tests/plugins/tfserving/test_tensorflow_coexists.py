"""TensorFlow, tensorflow-serving-api and the TF Serving dialect in one process, in either order.

Both define ``tensorflow.TensorShapeProto`` and the rest of TF Serving's
messages; ours are built into their own descriptor pool (protos/__init__.py),
so neither import fails with protobuf's ``duplicate symbol``, and a message
of ours reads back with TensorFlow's classes byte for byte. Each order runs
in a fresh child process (an import happens once per process).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tensorflow_serving") is None, reason="tensorflow-serving-api is not installed"
)

OURS = """
import modelplatform_tfserving.grpc.plugin, modelplatform_tfserving.rest.plugin
from modelplatform_tfserving.protos import serving_apis_pb2 as ours
"""
THEIRS = """
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2 as theirs
"""
ROUND_TRIP = """
request = ours.PredictRequest()
request.model_spec.name = "m"
request.inputs["x"].dtype = 1
request.inputs["x"].tensor_shape.dim.add(size=2)
request.inputs["x"].float_val.extend([1.5, 2.5])
read = theirs.PredictRequest.FromString(request.SerializeToString())
print(read.model_spec.name, tf.make_ndarray(read.inputs["x"]).tolist())
"""


@pytest.mark.parametrize(
    "first,second", [(THEIRS, OURS), (OURS, THEIRS)], ids=["tensorflow-first", "ours-first"]
)
def test_both_load_in_either_order(first: str, second: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", first + second + ROUND_TRIP], capture_output=True, text=True, timeout=180
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["m", "[1.5,", "2.5]"]
