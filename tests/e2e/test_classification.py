"""Triton's classification extension with the real clients: tritonclient HTTP and gRPC ``class_count``.

Against the bundled ``classifier`` (SCORES with labels.txt, LOGITS without),
``identity_fp32`` (not batching) and ``identity_bytes`` (a BYTES output,
which cannot be classified).
"""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

LABELS = ["apple", "banana", "cherry", "date", "elderberry"]
FEATURES = np.array([[0.1, 2.0, 0.5, -1.0], [3.0, 0.0, 0.2, 0.1]], dtype=np.float32)


def _logits(features: np.ndarray) -> np.ndarray:
    return np.concatenate([features, -features.mean(axis=1, keepdims=True)], axis=1)


def _scores(features: np.ndarray) -> np.ndarray:
    exp = np.exp(_logits(features) - _logits(features).max(axis=1, keepdims=True))
    return (exp / exp.sum(axis=1, keepdims=True)).astype(np.float32)


def _expected(values: np.ndarray, k: int, labels: list[str] | None) -> list[list[bytes]]:
    """Triton's strings: std::to_string(value):index[:label], the highest first, per batch row."""
    rows = []
    for row in values.astype(np.float32):
        order = np.argsort(-row, kind="stable")[:k]
        rows.append([f"{row[i]:f}:{i}{':' + labels[i] if labels else ''}".encode() for i in order])
    return rows


@pytest.fixture(params=["http", "grpc"])
def kind(request):
    return request.param


def _infer(server, kind: str, model: str, name: str, array: np.ndarray, datatype: str, output: str, k: int):
    module = httpclient if kind == "http" else grpcclient
    url = server.http_url if kind == "http" else server.grpc_url
    client = module.InferenceServerClient(url)
    try:
        tensor = module.InferInput(name, list(array.shape), datatype)
        tensor.set_data_from_numpy(array)
        result = client.infer(model, [tensor], outputs=[module.InferRequestedOutput(output, class_count=k)])
        return result.as_numpy(output), result.get_output(output)
    finally:
        client.close()


def _datatype(output) -> str:
    return output["datatype"] if isinstance(output, dict) else output.datatype


def test_top_k_with_labels_per_batch_row(server, kind):
    classes, output = _infer(server, kind, "classifier", "FEATURES", FEATURES, "FP32", "SCORES", 2)
    assert _datatype(output) == "BYTES"
    assert classes.shape == (2, 2)
    assert classes.tolist() == _expected(_scores(FEATURES), 2, LABELS)
    assert classes[0, 0].endswith(b":1:banana") and classes[1, 0].endswith(b":0:apple")


def test_output_without_labels_gives_value_and_index(server, kind):
    classes, _ = _infer(server, kind, "classifier", "FEATURES", FEATURES, "FP32", "LOGITS", 3)
    assert classes.tolist() == _expected(_logits(FEATURES), 3, None)
    assert classes[0, 0] == b"2.000000:1"


def test_count_past_the_classes_is_clamped(server, kind):
    classes, _ = _infer(server, kind, "classifier", "FEATURES", FEATURES[:1], "FP32", "SCORES", 7)
    assert classes.shape == (1, 5)
    assert sorted(c.split(b":")[2].decode() for c in classes[0]) == sorted(LABELS)


def test_model_without_batching_classifies_the_whole_tensor(server, kind):
    values = np.array([0.5, 4.0, -1.0, 2.5], dtype=np.float32)
    classes, _ = _infer(server, kind, "identity_fp32", "INPUT0", values, "FP32", "OUTPUT0", 2)
    assert classes.tolist() == [b"4.000000:1", b"2.500000:3"]


def test_bytes_output_is_refused_clearly(server, kind):
    values = np.array([b"a", b"b"], dtype=object)
    with pytest.raises(InferenceServerException, match="class result not available for output 'OUTPUT0'") as caught:
        _infer(server, kind, "identity_bytes", "INPUT0", values, "BYTES", "OUTPUT0", 1)
    assert "unsupported type 'BYTES'" in str(caught.value)


def test_classification_and_schedule_policy_are_advertised(server):
    with httpclient.InferenceServerClient(server.http_url) as client:
        extensions = client.get_server_metadata()["extensions"]
    grpc_client = grpcclient.InferenceServerClient(server.grpc_url)
    try:
        grpc_extensions = grpc_client.get_server_metadata().extensions
    finally:
        grpc_client.close()
    for found in (extensions, grpc_extensions):
        assert {"classification", "schedule_policy"} <= set(found)
