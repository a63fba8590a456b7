"""oip-rest against the real server with the real client: tritonclient.http (JSON tensors)."""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException


@pytest.fixture(scope="module")
def client(server):
    with httpclient.InferenceServerClient(server.http_url) as c:
        yield c


def _input(name: str, array: np.ndarray, datatype: str) -> httpclient.InferInput:
    tensor = httpclient.InferInput(name, list(array.shape), datatype)
    tensor.set_data_from_numpy(array, binary_data=False)
    return tensor


def _outputs(*names: str) -> list[httpclient.InferRequestedOutput]:
    return [httpclient.InferRequestedOutput(n, binary_data=False) for n in names]


def test_health(client):
    assert client.is_server_live()
    assert client.is_server_ready()
    assert client.is_model_ready("simple")
    assert client.is_model_ready("saved_model_half_plus_three", "123")
    assert not client.is_model_ready("simple", "7")
    assert not client.is_model_ready("no_such_model")


def test_server_metadata_lists_extensions(client):
    meta = client.get_server_metadata()
    assert meta["name"] == "modelplatform"
    assert isinstance(meta["extensions"], list)
    assert "model_configuration" in meta["extensions"]


def test_model_metadata_of_batching_model_has_leading_minus_one(client):
    meta = client.get_model_metadata("simple")
    assert meta["versions"] == ["1"]
    assert [i["name"] for i in meta["inputs"]] == ["INPUT0", "INPUT1"]
    assert meta["inputs"][0] == {"name": "INPUT0", "datatype": "INT32", "shape": [-1, 16]}
    assert meta["outputs"][1]["shape"] == [-1, 16]


def test_model_metadata_by_version(client):
    meta = client.get_model_metadata("saved_model_half_plus_three", "123")
    assert meta["versions"] == ["123"]
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1]}]


def test_model_config_is_triton_json(client):
    config = client.get_model_config("simple")
    assert config["name"] == "simple"
    assert config["max_batch_size"] == 8
    assert config["input"][0]["data_type"] == "TYPE_INT32"
    assert config["input"][0]["dims"] == [16]
    assert config["model_transaction_policy"] == {"decoupled": False}
    assert config["response_cache"] == {"enable": False}


def test_infer_simple(client):
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.int32)
    result = client.infer(
        "simple",
        [_input("INPUT0", a, "INT32"), _input("INPUT1", b, "INT32")],
        outputs=_outputs("OUTPUT0", "OUTPUT1"),
        request_id="req-7",
    )
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)
    response = result.get_response()
    assert response["id"] == "req-7"
    assert response["model_name"] == "simple"
    assert response["model_version"] == "1"


def test_infer_simple_batch_of_three(client):
    a = np.arange(48, dtype=np.int32).reshape(3, 16)
    b = np.full((3, 16), 5, dtype=np.int32)
    result = client.infer(
        "simple", [_input("INPUT0", a, "INT32"), _input("INPUT1", b, "INT32")], outputs=_outputs("OUTPUT0")
    )
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
    assert result.as_numpy("OUTPUT1") is None  # only the requested output comes back


def test_infer_simple_string(client):
    a = np.array([[str(i).encode() for i in range(16)]], dtype=object)
    b = np.array([[b"3"] * 16], dtype=object)
    result = client.infer(
        "simple_string",
        [_input("INPUT0", a, "BYTES"), _input("INPUT1", b, "BYTES")],
        outputs=_outputs("OUTPUT0", "OUTPUT1"),
    )
    assert [int(x) for x in result.as_numpy("OUTPUT0").flat] == [i + 3 for i in range(16)]
    assert [int(x) for x in result.as_numpy("OUTPUT1").flat] == [i - 3 for i in range(16)]


def test_infer_half_plus_three(client):
    x = np.array([1.0, 2.0, 5.0], dtype=np.float32)
    result = client.infer(
        "saved_model_half_plus_three", [_input("x", x, "FP32")], outputs=_outputs("y"), model_version="123"
    )
    np.testing.assert_allclose(result.as_numpy("y"), [3.5, 4.0, 5.5])


def test_unknown_model_is_404(client):
    x = np.zeros(1, dtype=np.float32)
    with pytest.raises(InferenceServerException) as error:
        client.infer("no_such_model", [_input("x", x, "FP32")])
    assert error.value.status() == "404"
    assert "no_such_model" in error.value.message()


def test_wrong_shape_names_model_tensor_and_shapes(client):
    a = np.zeros((1, 15), dtype=np.int32)
    with pytest.raises(InferenceServerException) as error:
        client.infer("simple", [_input("INPUT0", a, "INT32"), _input("INPUT1", a, "INT32")])
    message = error.value.message()
    assert error.value.status() == "400"
    assert "simple" in message and "INPUT0" in message and "[-1, 16]" in message and "[1, 15]" in message
