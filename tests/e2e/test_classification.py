"""Triton's classification extension with the real clients: tritonclient HTTP and gRPC ``class_count``.

Against the bundled ``classifier`` (SCORES with labels.txt, LOGITS without),
``identity_fp32`` (not batching) and ``identity_bytes`` (a BYTES output,
which cannot be classified). tritonclient.grpc runs in a subprocess
(``grpc_client``): its copy of Triton's protos clashes with ours in one process.
"""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from tests.plugins.repository.helpers import grpc_client

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
    """The classes (a nested list of bytes) and the output's datatype, over ``kind``."""
    if kind == "grpc":
        return _grpc_infer(server, model, name, array, datatype, output, k)
    with httpclient.InferenceServerClient(server.http_url) as client:
        tensor = httpclient.InferInput(name, list(array.shape), datatype)
        tensor.set_data_from_numpy(array)
        result = client.infer(
            model, [tensor], outputs=[httpclient.InferRequestedOutput(output, class_count=k)]
        )
    return result.as_numpy(output).tolist(), result.get_output(output)["datatype"]


def _grpc_infer(server, model: str, name: str, array: np.ndarray, datatype: str, output: str, k: int):
    found = grpc_client(
        server.grpc_url,
        f"""
        import numpy as np
        tensor = grpcclient.InferInput({name!r}, {list(array.shape)!r}, {datatype!r})
        tensor.set_data_from_numpy(np.array({array.tolist()!r}, dtype={str(array.dtype)!r}))
        try:
            answer = client.infer({model!r}, [tensor], outputs=[grpcclient.InferRequestedOutput({output!r}, class_count={k})])
            classes = answer.as_numpy({output!r})
            result = [[c.decode() for c in np.atleast_1d(row)] for row in classes] if classes.ndim > 1 else [
                c.decode() for c in classes
            ]
            result = {{"classes": result, "datatype": answer.get_output({output!r}).datatype}}
        except InferenceServerException as error:
            result = {{"error": str(error)}}
        """,
    )
    if "error" in found:
        raise InferenceServerException(found["error"])
    return _as_bytes(found["classes"]), found["datatype"]


def _as_bytes(value):
    return [_as_bytes(v) for v in value] if isinstance(value, list) else value.encode()


def test_top_k_with_labels_per_batch_row(server, kind):
    classes, datatype = _infer(server, kind, "classifier", "FEATURES", FEATURES, "FP32", "SCORES", 2)
    assert datatype == "BYTES"
    assert classes == _expected(_scores(FEATURES), 2, LABELS)  # shape [2, 2]: top 2 of each row
    assert classes[0][0].endswith(b":1:banana") and classes[1][0].endswith(b":0:apple")


def test_output_without_labels_gives_value_and_index(server, kind):
    classes, _ = _infer(server, kind, "classifier", "FEATURES", FEATURES, "FP32", "LOGITS", 3)
    assert classes == _expected(_logits(FEATURES), 3, None)
    assert classes[0][0] == b"2.000000:1"


def test_count_past_the_classes_is_clamped(server, kind):
    classes, _ = _infer(server, kind, "classifier", "FEATURES", FEATURES[:1], "FP32", "SCORES", 7)
    assert len(classes) == 1 and len(classes[0]) == 5  # shape [1, 5]: every class, no more
    assert sorted(c.split(b":")[2].decode() for c in classes[0]) == sorted(LABELS)


def test_model_without_batching_classifies_the_whole_tensor(server, kind):
    values = np.array([0.5, 4.0, -1.0, 2.5], dtype=np.float32)
    classes, _ = _infer(server, kind, "identity_fp32", "INPUT0", values, "FP32", "OUTPUT0", 2)
    assert classes == [b"4.000000:1", b"2.500000:3"]  # shape [2]: no batch dimension


def test_bytes_output_is_refused_clearly(server, kind):
    values = np.array([b"a", b"b"], dtype=object)
    with pytest.raises(
        InferenceServerException, match="class result not available for output 'OUTPUT0'"
    ) as caught:
        _infer(server, kind, "identity_bytes", "INPUT0", values, "BYTES", "OUTPUT0", 1)
    assert "unsupported type 'BYTES'" in str(caught.value)


def test_classification_and_schedule_policy_are_advertised(server):
    with httpclient.InferenceServerClient(server.http_url) as client:
        extensions = client.get_server_metadata()["extensions"]
    grpc_extensions = grpc_client(server.grpc_url, "result = list(client.get_server_metadata().extensions)")
    for found in (extensions, grpc_extensions):
        assert {"classification", "schedule_policy"} <= set(found)


def test_refused_before_the_model_runs(server):
    """A bad count, or a declared BYTES output, fails without an execution (Triton fails after)."""
    with httpclient.InferenceServerClient(server.http_url) as client:
        before = client.get_inference_statistics("identity_bytes")["model_stats"][0]["execution_count"]
        tensor = httpclient.InferInput("INPUT0", [1], "BYTES")
        tensor.set_data_from_numpy(np.array([b"a"], dtype=object))
        with pytest.raises(InferenceServerException, match="unsupported type 'BYTES'"):
            client.infer(
                "identity_bytes",
                [tensor],
                outputs=[httpclient.InferRequestedOutput("OUTPUT0", class_count=1)],
            )
        after = client.get_inference_statistics("identity_bytes")["model_stats"][0]["execution_count"]
        features = httpclient.InferInput("FEATURES", [1, 4], "FP32")
        features.set_data_from_numpy(FEATURES[:1])
        bad = httpclient.InferRequestedOutput("SCORES")
        bad._parameters["classification"] = -2  # what class_count cannot send: refused by value
        with pytest.raises(InferenceServerException, match="'classification' must be a non-negative integer"):
            client.infer("classifier", [features], outputs=[bad])
    assert after == before


def test_an_input_that_does_not_fit_is_named_before_the_classification(server):
    """Both wrong: the input's error answers, as validation runs before the output checks."""
    with httpclient.InferenceServerClient(server.http_url) as client:
        tensor = httpclient.InferInput("INPUT0", [1], "INT32")  # declared BYTES
        tensor.set_data_from_numpy(np.array([7], dtype=np.int32))
        with pytest.raises(InferenceServerException, match="INPUT0") as caught:
            client.infer(
                "identity_bytes",
                [tensor],
                outputs=[httpclient.InferRequestedOutput("OUTPUT0", class_count=1)],
            )
    assert "class result" not in str(caught.value)
