"""A server for the TF Serving tests: test models built here, plus the bundled ones.

``echo`` returns each input it gets as ``<input>_out`` and declares one
signature per datatype (alias ``v``), so every JSON type rule has a target;
``classifier`` has two versions with labels and both classify outputs.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from modelplatform.testing import ServerProcess

BUNDLED = Path(__file__).resolve().parents[3] / "model_repository"
HALF = "saved_model_half_plus_three"
TYPES = {
    "i8": "INT8",
    "u8": "UINT8",
    "i16": "INT16",
    "i32": "INT32",
    "i64": "INT64",
    "u32": "UINT32",
    "u64": "UINT64",
    "b": "BOOL",
    "f": "FP32",
    "d": "FP64",
    "s": "BYTES",
    "h": "FP16",
    "u16": "UINT16",
}

ECHO_MODEL = """
class Model:
    def infer(self, inputs):
        return {name + "_out": value for name, value in inputs.items()}
"""

CLASSIFIER_MODEL = """
import numpy as np

SCALE = {scale}


class Model:
    def infer(self, inputs):
        x = inputs["x"].astype(np.float32) * np.float32(SCALE)
        scores = np.stack([x, 1 - x], axis=1).astype(np.float32)
        classes = np.array([[b"pos", b"neg"]] * len(x), dtype=object)
        return {{"scores": scores, "classes": classes}}
"""


def _tensor(name: str, datatype: str, dims: str, optional: bool = False) -> str:
    config_type = "TYPE_STRING" if datatype == "BYTES" else f"TYPE_{datatype}"
    extra = " optional: true" if optional else ""
    return f'{{ name: "{name}" data_type: {config_type} dims: {dims}{extra} }}'


def _parameter(key: str, value: object) -> str:
    return (
        f"parameters {{ key: {json.dumps(key)} value {{ string_value: {json.dumps(json.dumps(value))} }} }}"
    )


def _echo_config() -> str:
    tensors = {**{k: (t, "[ -1 ]") for k, t in TYPES.items()}, "m": ("FP32", "[ -1, -1 ]")}
    inputs = ",\n".join(_tensor(k, t, d, optional=True) for k, (t, d) in tensors.items())
    outputs = ",\n".join(_tensor(f"{k}_out", t, d) for k, (t, d) in tensors.items())
    signatures = {k: {"inputs": {"v": k}, "outputs": {"v": f"{k}_out"}} for k in tensors}
    signatures["serving_default"] = signatures["f"]
    signatures["bytes"] = {"inputs": {"v": "s"}, "outputs": {"v_bytes": "s_out"}}
    signatures["pair"] = {"inputs": {"a": "f", "b": "i64"}, "outputs": {"a": "f_out", "b": "i64_out"}}
    return f'backend: "python"\ninput [\n{inputs}\n]\noutput [\n{outputs}\n]\n' + _parameter(
        "tfserving.signatures", signatures
    )


def _classifier_config() -> str:
    signatures = {
        "serving_default": {
            "method_name": "classify",
            "inputs": {"inputs": "x"},
            "outputs": {"scores": "scores", "classes": "classes"},
        },
        "predict": {"inputs": {"x": "x"}, "outputs": {"scores": "scores"}},
    }
    return "\n".join(
        [
            'backend: "python"',
            "version_policy { all {} }",
            f"input [ {_tensor('x', 'FP32', '[ -1 ]')} ]",
            f"output [ {_tensor('scores', 'FP32', '[ -1, 2 ]')}, {_tensor('classes', 'BYTES', '[ -1, 2 ]')} ]",
            _parameter("tfserving.signatures", signatures),
            _parameter("tfserving.labels", {"stable": 1, "canary": "2"}),
        ]
    )


def build_repository(root: Path) -> Path:
    for name in (HALF, "identity_bytes", "identity_fp32", "simple"):
        shutil.copytree(BUNDLED / name, root / name)
    (root / "echo" / "1").mkdir(parents=True)
    (root / "echo" / "config.pbtxt").write_text(_echo_config())
    (root / "echo" / "1" / "model.py").write_text(ECHO_MODEL)
    (root / "classifier").mkdir()
    (root / "classifier" / "config.pbtxt").write_text(_classifier_config())
    for version, scale in ((1, 1.0), (2, 2.0)):
        (root / "classifier" / str(version)).mkdir()
        (root / "classifier" / str(version) / "model.py").write_text(CLASSIFIER_MODEL.format(scale=scale))
    return root


@pytest.fixture(scope="session")
def tf_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    repository = build_repository(tmp_path_factory.mktemp("tfserving_models"))
    with ServerProcess(
        "--model-repository",
        str(repository),
        "--plugins",
        "python,tfserving-rest,tfserving-grpc,oip-rest,binary-data",
    ) as process:
        yield process
