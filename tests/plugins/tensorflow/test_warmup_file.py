"""TF Serving's warmup file in a real SavedModel: its records run before the version serves.

``half_plus_two`` (TF Serving's layout) gains
``assets.extra/tf_serving_warmup_requests`` with a predict and a classify
record, as TF Serving's warmup tooling writes them; the server replays both
through the tensorflow backend before the version serves.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np

from modelplatform.testing import ServerProcess
from modelplatform_tfserving.grpc.tensor_proto import from_array
from modelplatform_tfserving.protos import prediction_log_pb2 as logs
from modelplatform_tfserving.protos import serving_apis_pb2 as apis
from modelplatform_tfserving.tfrecord import write_records

WARMUP_FILE = Path("assets.extra") / "tf_serving_warmup_requests"


def _records() -> list[bytes]:
    predict = apis.PredictRequest(model_spec=apis.ModelSpec(name="half_plus_two"))
    predict.inputs["x"].CopyFrom(from_array(np.array([1.0, 2.0], np.float32), "FP32"))
    classify = apis.ClassificationRequest(
        model_spec=apis.ModelSpec(name="half_plus_two", signature_name="classify_x_to_y")
    )
    classify.input.example_list.examples.add().features.feature["x"].float_list.value.append(3.0)
    return [
        logs.PredictionLog(predict_log=logs.PredictLog(request=predict)).SerializeToString(),
        logs.PredictionLog(classify_log=logs.ClassifyLog(request=classify)).SerializeToString(),
    ]


def test_warmup_records_run_through_the_savedmodel(tf_repository: Path, tmp_path: Path) -> None:
    version = tmp_path / "half_plus_two" / "7"
    shutil.copytree(tf_repository / "half_plus_two" / "1", version)
    (version / WARMUP_FILE).parent.mkdir()
    write_records(version / WARMUP_FILE, _records())
    with ServerProcess("--model-repository", str(tmp_path), timeout=180) as server:
        log = server.log()
    warmed = re.search(r"model_warmed_up .*model=half_plus_two .*samples=(\d+)", log)
    assert warmed is not None, log[-3000:]
    assert warmed.group(1) == "2"
