"""In-process BLS (issue 18 point 2) against a real server with real clients.

``bls_simple`` (bundled) is a Triton python model whose ``execute`` calls
``simple`` with ``pb_utils.InferenceRequest(...).exec()``. The test
repository adds our own python models calling ``simple`` through the
``models`` handle ``load`` receives (blocking and async), and Triton models
reading a streaming model through ``exec(decoupled=True)`` /
``async_exec(decoupled=True)`` and calling a missing model (``has_error``).
"""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.http as httpclient

from modelplatform.testing import ServerProcess

from ..plugins.ensemble.models import make_repository
from ..plugins.repository.helpers import grpc_client

ROW = np.arange(16, dtype=np.int32).reshape(1, 16)
TWOS = np.full((1, 16), 2, dtype=np.int32)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    repository = make_repository(tmp_path_factory.mktemp("bls"))
    with ServerProcess(
        "--model-repository", str(repository), "--model-control-mode", "explicit", "--load-model", "*"
    ) as process:
        yield process


@pytest.fixture(scope="module")
def client(server):
    with httpclient.InferenceServerClient(server.http_url) as connection:
        yield connection


def _pair(a: np.ndarray, b: np.ndarray) -> list:
    inputs = [
        httpclient.InferInput("INPUT0", list(a.shape), "INT32"),
        httpclient.InferInput("INPUT1", list(b.shape), "INT32"),
    ]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    return inputs


def _count(value: int) -> list:
    tensor = httpclient.InferInput("COUNT", [1], "INT32")
    tensor.set_data_from_numpy(np.array([value], dtype=np.int32))
    return [tensor]


def test_triton_bls_exec_over_tritonclient_http(client):
    for _ in range(8):  # past the calls measured on the thread: exec() keeps it there
        result = client.infer("bls_simple", _pair(ROW, TWOS))
        assert (result.as_numpy("OUTPUT0") == 10 * (ROW + 2)).all()
        assert (result.as_numpy("OUTPUT1") == 10 * (ROW - 2)).all()


def test_triton_bls_exec_over_tritonclient_grpc(server):
    result = grpc_client(
        server.grpc_url,
        """
        import numpy as np
        a = np.arange(16, dtype=np.int32).reshape(1, 16)
        inputs = [grpcclient.InferInput("INPUT0", [1, 16], "INT32"), grpcclient.InferInput("INPUT1", [1, 16], "INT32")]
        inputs[0].set_data_from_numpy(a)
        inputs[1].set_data_from_numpy(a)
        answer = client.infer("bls_simple", inputs)
        result = [answer.as_numpy("OUTPUT0").tolist(), answer.as_numpy("OUTPUT1").tolist()]
    """,
    )
    assert result == [[[20 * i for i in range(16)]], [[0] * 16]]


def test_the_nested_call_is_counted_by_the_called_model(client):
    before = client.get_inference_statistics("simple")["model_stats"][0]["inference_count"]
    client.infer("bls_simple", _pair(ROW, TWOS))
    after = client.get_inference_statistics("simple")["model_stats"][0]["inference_count"]
    assert after - before == 1


@pytest.mark.parametrize("model", ["caller", "async_caller"])
def test_our_python_models_call_other_models(client, model):
    for _ in range(8):  # the blocking call must survive the switch to inline calls
        result = client.infer(model, _pair(ROW, TWOS))
        if model == "caller":
            assert (result.as_numpy("OUTPUT0") == ROW + 3).all()
            assert (result.as_numpy("OUTPUT1") == ROW - 1).all()
        else:
            assert (result.as_numpy("OUTPUT0") == ROW + 4).all()
            assert (result.as_numpy("OUTPUT1") == TWOS).all()


def test_a_blocking_call_made_inline_on_the_loop_moves_the_model_to_its_thread(client):
    for _ in range(12):  # cheap calls without a nested one: the model now runs inline
        assert (client.infer("sometimes_caller", _pair(ROW, TWOS)).as_numpy("OUTPUT0") == ROW).all()
    nines = np.full((1, 16), 99, dtype=np.int32)
    result = client.infer("sometimes_caller", _pair(ROW, nines))
    assert (result.as_numpy("OUTPUT0") == ROW + 99).all()
    # the call that found itself on the loop ran again on the thread: infer() ran twice for it
    assert (result.as_numpy("OUTPUT1") == 14).all()
    assert (client.infer("sometimes_caller", _pair(ROW, nines)).as_numpy("OUTPUT1") == 15).all()


@pytest.mark.parametrize("model", ["bls_stream_async", "bls_stream_sync"])
def test_decoupled_bls_reads_every_response_and_errors_come_back_in_the_response(client, model):
    for count in (3, 0, 5):
        result = client.infer(model, _count(count))
        assert result.as_numpy("INDEXES").tolist() == list(range(1, count + 1))
        error = result.as_numpy("ERROR").reshape(-1)[0].decode()
        assert "no_such_model" in error, error


def test_bls_reads_a_triton_decoupled_model_through_its_response_sender(client):
    text = httpclient.InferInput("TEXT", [1], "BYTES")
    text.set_data_from_numpy(np.array([b"one two three"], dtype=np.object_))
    result = client.infer("bls_words", [text])
    assert [w.decode() if isinstance(w, bytes) else w for w in result.as_numpy("WORDS")] == [
        "one",
        "two",
        "three",
    ]


def test_a_process_instance_refuses_nested_calls_clearly(client):
    with pytest.raises(Exception) as raised:
        client.infer("process_caller", _pair(ROW, TWOS))
    assert "not available in a process instance" in str(raised.value)


def test_a_failing_nested_call_fails_the_caller_with_a_clear_error(client):
    with pytest.raises(Exception) as raised:
        client.infer("bls_stream_async", _count(-1))  # stream_counter refuses: COUNT must be 0..1000
    assert "COUNT must be" in str(raised.value)
