"""TF Serving's warmup file: the TFRecord reader, and the records reaching the model (issue 13, point 4).

``half`` is saved_model_half_plus_three with a python model that appends
every ``x`` it receives to ``seen.jsonl`` beside it, so the test reads what
warmup sent, in order. Its ``assets.extra/tf_serving_warmup_requests`` is
written here with the plugin's own protos and TFRecord writer.
"""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from modelplatform import InvalidArgument
from modelplatform.testing import ServerProcess
from modelplatform_tfserving.grpc.tensor_proto import from_array
from modelplatform_tfserving.protos import prediction_log_pb2 as logs
from modelplatform_tfserving.protos import serving_apis_pb2 as apis
from modelplatform_tfserving.tfrecord import crc32c, masked_crc, read_records, write_records

from .conftest import BUNDLED, HALF
from .http import get, post

RECORDING_MODEL = """
import json
from pathlib import Path

import numpy as np


class Model:
    def load(self, config, version_dir):
        self.seen = Path(version_dir) / "seen.jsonl"

    def infer(self, inputs):
        x = inputs["x"]
        with self.seen.open("a") as out:
            out.write(json.dumps(x.tolist()) + "\\n")
        return {"y": (x * 0.5 + 3).astype(np.float32)}
"""

WARMUP_FILE = Path("assets.extra") / "tf_serving_warmup_requests"
REGRESS = "tensorflow/serving/regress"
CLASSIFY = "tensorflow/serving/classify"


# ---- the TFRecord reader ----


def test_crc32c_matches_the_standard_check_value() -> None:
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0


def test_records_round_trip_and_every_byte_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "records"
    write_records(path, [b"one", b"", b"three" * 100])
    assert read_records(path, 10, 1000) == [b"one", b"", b"three" * 100]
    data = path.read_bytes()
    assert data[8:12] == struct.pack("<I", masked_crc(data[:8]))
    for offset, _part in ((0, "length"), (9, "length checksum"), (12, "data"), (16, "data checksum")):
        damaged = bytearray(data)
        damaged[offset] ^= 0x01
        path.write_bytes(bytes(damaged))
        with pytest.raises(InvalidArgument, match="record 0"):
            read_records(path, 10, 1000)
    path.write_bytes(data[:-2])
    with pytest.raises(InvalidArgument, match="record 2 is truncated in its data checksum"):
        read_records(path, 10, 1000)


def test_record_count_and_size_are_bounded(tmp_path: Path) -> None:
    path = tmp_path / "records"
    write_records(path, [b"x"] * 1001)
    assert len(read_records(path, 1001, 10)) == 1001
    with pytest.raises(InvalidArgument, match="more than 1000 records"):
        read_records(path, 1000, 10)
    write_records(path, [b"y" * 11])
    with pytest.raises(InvalidArgument, match="record 0 is 11 bytes, over the limit of 10"):
        read_records(path, 1000, 10)


# ---- warmup files reaching a model through a real server ----


def _spec(signature: str = "") -> apis.ModelSpec:
    return apis.ModelSpec(name=HALF, signature_name=signature)


def _input(*values: float) -> apis.Input:
    message = apis.Input()
    for value in values:
        message.example_list.examples.add().features.feature["x"].float_list.value.append(value)
    return message


def _predict_log(signature: str, values: list[float]) -> bytes:
    request = apis.PredictRequest(model_spec=_spec(signature))
    request.inputs["x"].CopyFrom(from_array(np.array(values, np.float32), "FP32"))
    return logs.PredictionLog(predict_log=logs.PredictLog(request=request)).SerializeToString()


def _records() -> list[bytes]:
    regress = apis.RegressionRequest(model_spec=_spec(REGRESS), input=_input(4.0))
    classify = apis.ClassificationRequest(model_spec=_spec(CLASSIFY), input=_input(5.0, 5.5))
    multi = apis.MultiInferenceRequest(input=_input(6.0))
    multi.tasks.add(model_spec=_spec(REGRESS), method_name=REGRESS)
    multi.tasks.add(model_spec=_spec(CLASSIFY), method_name=CLASSIFY)
    return [
        _predict_log("", [1.0, 2.0, 3.0]),
        logs.PredictionLog(regress_log=logs.RegressLog(request=regress)).SerializeToString(),
        logs.PredictionLog(classify_log=logs.ClassifyLog(request=classify)).SerializeToString(),
        logs.PredictionLog(multi_inference_log=logs.MultiInferenceLog(request=multi)).SerializeToString(),
    ]


def _model(root: Path, name: str, records: list[bytes] | bytes) -> Path:
    shutil.copytree(BUNDLED / HALF, root / name, ignore=shutil.ignore_patterns("*.py"))
    config = root / name / "config.pbtxt"
    config.write_text(config.read_text().replace(f'name: "{HALF}"', f'name: "{name}"'))
    version = root / name / "123"
    (version / "model.py").write_text(RECORDING_MODEL)
    (version / "assets.extra").mkdir()
    if isinstance(records, bytes):
        (version / WARMUP_FILE).write_bytes(records)
    else:
        write_records(version / WARMUP_FILE, records)
    return version


@pytest.fixture(scope="module")
def warmed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    root = tmp_path_factory.mktemp("tf_warmup")
    version = _model(root, HALF, _records())
    _model(root, "damaged", _records()[0][:-1] + b"\x00")  # not even a TFRecord
    _model(root, "unknown_signature", [_predict_log("", [1.0]), _predict_log("nope", [1.0])])
    plugins = "python,tfserving-rest,tfserving-grpc"
    with ServerProcess("--model-repository", str(root), "--plugins", plugins) as server:
        yield server, version


def _seen(version: Path) -> list[list[float]]:
    return [json.loads(line) for line in (version / "seen.jsonl").read_text().splitlines()]


def test_every_record_reaches_the_model_once_in_order(warmed: tuple[ServerProcess, Path]) -> None:
    server, version = warmed
    # Predict, Regress, Classify (two examples), MultiInference (one request per task);
    # once each although both tfserving plugins answer the hook.
    assert _seen(version) == [[1.0, 2.0, 3.0], [4.0], [5.0, 5.5], [6.0], [6.0]]
    reply = post(server.http_url, f"/v1/models/{HALF}:predict", '{"instances": [2.0]}')
    assert reply.status == 200 and reply.json() == {"predictions": [4.0]}
    assert _seen(version)[-1] == [2.0]


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        ("damaged", f"{WARMUP_FILE.as_posix()}: record 0 "),
        ("unknown_signature", f"{WARMUP_FILE.as_posix()}: record 1: signature 'nope' is not declared"),
    ],
)
def test_a_bad_warmup_file_fails_the_load_with_its_reason(
    warmed: tuple[ServerProcess, Path], model: str, reason: str
) -> None:
    server, _ = warmed
    reply = get(server.http_url, f"/v1/models/{model}")
    assert reply.status == 200, reply.text
    [status] = reply.json()["model_version_status"]
    assert status["state"] != "AVAILABLE"
    assert reason in status["status"]["error_message"]
