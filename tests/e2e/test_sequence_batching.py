"""Stateful models through the real server with Triton's own clients (issue 29 points 1 and 8).

tritonclient HTTP and gRPC (unary and ``start_stream``) and perf_analyzer
``--sequence-length`` against the bundled ``sequence_accumulator`` and two
variants of it: one slot with a short idle timeout, and the ``oldest``
strategy. The model itself refuses a call holding two requests of one
sequence and a CORRID control that differs from ``correlation_id()``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from modelplatform.testing import ServerProcess

from ..conftest import MODEL_REPOSITORY, ROOT

MODEL = "sequence_accumulator"
ONE_SLOT = "accumulator_one_slot"
OLDEST = "accumulator_oldest"
RELAY = "sequence_relay"
NATIVE = "native_accumulator"
#: The same running sum as a native ``class Model``: controls arrive in its inputs dict.
NATIVE_MODEL = """
import numpy as np


class Model:
    def load(self, config, version_dir):
        self.sums = {}

    def infer(self, inputs):
        rows = inputs["INPUT"].shape[0]
        totals = np.zeros((rows, 1), np.int32)
        for row in range(rows):  # a joined call would hold several sequences' rows
            key = int(inputs["CORRID"][row, 0])
            if inputs["START"][row, 0]:
                self.sums[key] = 0
            if inputs["READY"][row, 0]:
                self.sums[key] = self.sums.get(key, 0) + int(inputs["INPUT"][row, 0])
            totals[row, 0] = self.sums.get(key, 0)
        return {"OUTPUT": totals, "BATCH_ROWS": np.full((rows, 1), rows, np.int32)}
"""
#: A stateless Triton python model passing its own correlation id and flags on through BLS.
RELAY_CONFIG = f"""
name: "{RELAY}"
backend: "python"
max_batch_size: 4
input [ {{ name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] }} ]
output [
  {{ name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] }},
  {{ name: "PARAMETERS" data_type: TYPE_STRING dims: [ 1 ] }}
]
"""
RELAY_MODEL = f"""
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [self._one(request) for request in requests]

    def _one(self, request):
        call = pb_utils.InferenceRequest(
            model_name="{MODEL}",
            requested_output_names=["OUTPUT"],
            inputs=[pb_utils.get_input_tensor_by_name(request, "INPUT")],
            correlation_id=request.correlation_id(),
            flags=request.flags(),
        )
        answer = call.exec()
        if answer.has_error():
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(answer.error().message()))
        total = pb_utils.get_output_tensor_by_name(answer, "OUTPUT").as_numpy()
        parameters = np.array([[request.parameters().encode()]], dtype=object)
        return pb_utils.InferenceResponse(
            output_tensors=[pb_utils.Tensor("OUTPUT", total), pb_utils.Tensor("PARAMETERS", parameters)]
        )
"""
PERF_ANALYZER = ROOT / ".venv/perf_analyzer/perf_analyzer"
#: tritonclient.grpc runs in a child process: its protos and ours cannot share one (docs/protocols/oip-grpc.md).
GRPC_PROBE = Path(__file__).with_name("sequence_grpc_probe.py")
BOUNDED = ["--measurement-interval", "1000", "--stability-percentage", "999", "--max-trials", "3"]


def _variant(repository, name: str, replacements: dict[str, str]) -> None:
    shutil.copytree(MODEL_REPOSITORY / MODEL, repository / name)
    config = (repository / name / "config.pbtxt").read_text().replace(f'name: "{MODEL}"', f'name: "{name}"')
    for old, new in replacements.items():
        assert old in config
        config = config.replace(old, new)
    (repository / name / "config.pbtxt").write_text(config)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    repository = tmp_path_factory.mktemp("sequences")
    shutil.copytree(MODEL_REPOSITORY / MODEL, repository / MODEL)
    _variant(repository, ONE_SLOT, {"max_batch_size: 4": "max_batch_size: 0", "5000000": "400000"})
    oldest = "oldest { max_candidate_sequences: 4 preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 50000 }"
    _variant(repository, OLDEST, {"direct { }": oldest})
    native = '{ name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }'
    _variant(
        repository,
        NATIVE,
        {'{ name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_STRING } ] }': native},
    )
    (repository / NATIVE / "1" / "model.py").write_text(NATIVE_MODEL)
    (repository / RELAY / "1").mkdir(parents=True)
    (repository / RELAY / "config.pbtxt").write_text(RELAY_CONFIG)
    (repository / RELAY / "1" / "model.py").write_text(RELAY_MODEL)
    with ServerProcess("--model-repository", str(repository)) as process:
        yield process


def _http_input(value: int, batching: bool = True) -> httpclient.InferInput:
    data = np.array([[value]] if batching else [value], dtype=np.int32)
    tensor = httpclient.InferInput("INPUT", list(data.shape), "INT32")
    tensor.set_data_from_numpy(data)
    return tensor


def _run_sequence(client, model: str, sequence_id, values, batching: bool = True) -> list[tuple[int, int]]:
    """(OUTPUT, FLAGS) of each request of one sequence, sent one after another."""
    answers = []
    for index, value in enumerate(values):
        result = client.infer(
            model,
            [_http_input(value, batching)],
            sequence_id=sequence_id,
            sequence_start=index == 0,
            sequence_end=index == len(values) - 1,
        )
        answers.append((int(result.as_numpy("OUTPUT").item()), int(result.as_numpy("FLAGS").item())))
    return answers


def _running_sums(values) -> list[int]:
    return [int(s) for s in np.cumsum(values)]


@pytest.fixture(scope="module")
def grpc_probe(server) -> dict:
    """What tritonclient.grpc saw: unary calls, a stream, errors (sequence_grpc_probe.py)."""
    done = subprocess.run(
        [sys.executable, str(GRPC_PROBE), server.grpc_url, MODEL], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_server_advertises_the_sequence_extension(server, grpc_probe):
    assert "sequence" in httpclient.InferenceServerClient(server.http_url).get_server_metadata()["extensions"]
    assert "sequence" in grpc_probe["extensions"]


def test_http_sequences_with_integer_and_string_ids_keep_their_own_sums_and_flags(server):
    client = httpclient.InferenceServerClient(server.http_url)
    values = [3, 4, 5, 6]
    for sequence_id in (2**64 - 1, "session-a"):
        answers = _run_sequence(client, MODEL, sequence_id, values)
        assert [a for a, _ in answers] == _running_sums(values)
        assert [f for _, f in answers] == [1, 0, 0, 2]  # pb_utils request.flags(): START, -, -, END
    single = _run_sequence(client, MODEL, 7, [9])
    assert single == [(9, 3)]  # START and END on one request


def test_grpc_sequences_with_integer_and_string_ids(grpc_probe):
    assert grpc_probe["unary"] == {str(2**63 - 1): [10, 30, 60], "grpc-session": [10, 30, 60]}


def test_grpc_stream_pipelines_interleaved_sequences_in_order(grpc_probe):
    assert grpc_probe["stream"] == {
        "1001": _running_sums([1, 2, 3, 4, 5, 6]),
        "1002": _running_sums([100, -1, -2, -3, -4, -5]),
        "s-1003": [7, 14, 21, 28, 35, 42],
    }
    assert grpc_probe["pipelined"] == {"one": _running_sums(range(1, 21))}  # 20 pipelined on one stream


def test_more_concurrent_sequences_than_slots_wait_and_all_finish_right(server):
    """8 sequences on 4 slots: the later ones wait for a slot; none sees another's state."""

    def one(sequence_id: int) -> list[int]:
        client = httpclient.InferenceServerClient(server.http_url)
        return [total for total, _ in _run_sequence(client, MODEL, sequence_id, [sequence_id] * 6)]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(500, 508)))
    assert results == [[s * k for k in range(1, 7)] for s in range(500, 508)]


def test_triton_errors_for_a_request_outside_a_sequence(server):
    client = httpclient.InferenceServerClient(server.http_url)
    with pytest.raises(
        InferenceServerException, match="must specify the START flag on the first request"
    ) as error:
        client.infer(MODEL, [_http_input(1)], sequence_id=31337)
    assert error.value.status() == "400"
    with pytest.raises(InferenceServerException, match="must specify a non-zero or non-empty correlation ID"):
        client.infer(MODEL, [_http_input(1)])
    two_rows = httpclient.InferInput("INPUT", [2, 1], "INT32")
    two_rows.set_data_from_numpy(np.array([[1], [2]], dtype=np.int32))
    with pytest.raises(InferenceServerException, match="must specify batch-size 1"):
        client.infer(MODEL, [two_rows], sequence_id=5, sequence_start=True)


def test_grpc_errors_for_a_request_outside_a_sequence(grpc_probe):
    assert grpc_probe["refusal"]["status"] == "StatusCode.INVALID_ARGUMENT"
    assert (
        "sequence never-started to model 'sequence_accumulator' must specify the START flag"
        in (grpc_probe["refusal"]["message"])
    )


def test_grpc_refuses_a_uint64_sequence_id_as_triton_does(grpc_probe):
    assert grpc_probe["uint64"]["code"] == "INVALID_ARGUMENT"
    assert "expected int64_param or string_param" in grpc_probe["uint64"]["details"]
    assert grpc_probe["negative_id"] == [9, 3]  # int64 -1 is the uint64 2**64 - 1, as on Triton


def test_a_second_start_restarts_the_sequence(server):
    client = httpclient.InferenceServerClient(server.http_url)
    client.infer(MODEL, [_http_input(50)], sequence_id=77, sequence_start=True)
    restarted = client.infer(MODEL, [_http_input(1)], sequence_id=77, sequence_start=True)
    ended = client.infer(MODEL, [_http_input(1)], sequence_id=77, sequence_end=True)
    assert int(restarted.as_numpy("OUTPUT").item()) == 1 and int(ended.as_numpy("OUTPUT").item()) == 2
    assert "sequence_restarted" in server.log()


def test_an_idle_sequence_frees_its_slot_for_a_waiting_one(server):
    client = httpclient.InferenceServerClient(server.http_url)
    client.infer(ONE_SLOT, [_http_input(5, False)], sequence_id=1, sequence_start=True)
    started = time.monotonic()
    waiting = _run_sequence(
        httpclient.InferenceServerClient(server.http_url), ONE_SLOT, 2, [4, 4], batching=False
    )
    waited = time.monotonic() - started
    assert [total for total, _ in waiting] == [4, 8]
    assert waited >= 0.3  # sequence 1 held the only slot until its 0.4 s idle timeout
    with pytest.raises(
        InferenceServerException, match="sequence 1 to model 'accumulator_one_slot' must specify the START"
    ):
        client.infer(ONE_SLOT, [_http_input(5, False)], sequence_id=1)
    assert "sequence_idle_ended" in server.log()


def test_a_new_sequence_waits_no_longer_than_its_timeout(server):
    client = httpclient.InferenceServerClient(server.http_url)
    client.infer(ONE_SLOT, [_http_input(1, False)], sequence_id=40, sequence_start=True)
    with pytest.raises(InferenceServerException, match="Request timeout expired") as error:
        client.infer(ONE_SLOT, [_http_input(1, False)], sequence_id=41, sequence_start=True, timeout=100_000)
    assert error.value.status() == "503"
    ended = client.infer(ONE_SLOT, [_http_input(1, False)], sequence_id=40, sequence_end=True)
    assert int(ended.as_numpy("OUTPUT").item()) == 2


def test_oldest_batches_requests_of_different_sequences_only(server):
    barrier = threading.Barrier(4)

    def one(sequence_id: int) -> list[tuple[int, int]]:
        client = httpclient.InferenceServerClient(server.http_url)
        answers = []
        for step in range(5):
            barrier.wait(timeout=30)
            result = client.infer(
                OLDEST,
                [_http_input(sequence_id)],
                sequence_id=sequence_id,
                sequence_start=step == 0,
                sequence_end=step == 4,
            )
            answers.append((int(result.as_numpy("OUTPUT").item()), int(result.as_numpy("BATCH_ROWS").item())))
        return answers

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one, range(1, 5)))
    assert [[total for total, _ in r] for r in results] == [[s * k for k in range(1, 6)] for s in range(1, 5)]
    assert max(rows for r in results for _, rows in r) > 1  # requests of different sequences shared calls


@pytest.mark.parametrize("protocol", ["http", "grpc", "grpc-streaming"])
def test_perf_analyzer_runs_sequences(server, protocol):
    """Four concurrent sequences on the model's four slots; perf_analyzer checks every answer's status."""
    assert PERF_ANALYZER.exists(), "perf_analyzer is missing: run `make perf-analyzer`"
    url = server.http_url if protocol == "http" else server.grpc_url
    streaming = ["--streaming"] if protocol == "grpc-streaming" else []
    command = [
        str(PERF_ANALYZER), "-m", MODEL, "-i", protocol.removesuffix("-streaming"), *streaming, "-u", url,
        "--sequence-length", "5", "--concurrency-range", "4", *BOUNDED,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Sequence count:" in done.stdout and "Throughput:" in done.stdout


def test_the_model_config_shows_the_sequence_batching(server):
    config = httpclient.InferenceServerClient(server.http_url).get_model_config(MODEL)
    batching = config["sequence_batching"]
    assert batching["max_sequence_idle_microseconds"] == 5000000
    assert [c["name"] for c in batching["control_input"]] == ["START", "END", "READY", "CORRID"]


def test_a_python_model_passes_its_sequence_on_through_bls(server):
    """The relay is stateless: it sees the id and flags, not the three parameters, and hands them on."""
    client = httpclient.InferenceServerClient(server.http_url)
    totals = []
    for index, value in enumerate([2, 3, 4]):
        result = client.infer(
            RELAY,
            [_http_input(value)],
            sequence_id="relayed",
            sequence_start=index == 0,
            sequence_end=index == 2,
            parameters={"kept": "yes"},
        )
        totals.append(int(result.as_numpy("OUTPUT").item()))
        seen = json.loads(result.as_numpy("PARAMETERS").item())
        assert seen["kept"] == "yes" and not {"sequence_id", "sequence_start", "sequence_end"} & set(seen)
    assert totals == [2, 5, 9]
    with pytest.raises(InferenceServerException, match="sequence relayed to model 'sequence_accumulator'"):
        client.infer(RELAY, [_http_input(1)], sequence_id="relayed")  # ended: the callee refuses it


def test_a_native_python_model_gets_the_controls_one_request_per_call(server):
    barrier = threading.Barrier(3)

    def one(sequence_id: int) -> list[tuple[int, int]]:
        client = httpclient.InferenceServerClient(server.http_url)
        answers = []
        for step in range(4):
            barrier.wait(timeout=30)
            result = client.infer(
                NATIVE,
                [_http_input(step + 1)],
                sequence_id=sequence_id,
                sequence_start=step == 0,
                sequence_end=step == 3,
            )
            answers.append((int(result.as_numpy("OUTPUT").item()), int(result.as_numpy("BATCH_ROWS").item())))
        return answers

    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(one, (61, 62, 63)))
    assert [[total for total, _ in r] for r in results] == [[1, 3, 6, 10]] * 3
    assert {rows for r in results for _, rows in r} == {1}  # never joined: each step applied once


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"sequence_id": 1.5, "sequence_start": True}, "'sequence_id'"),
        ({"sequence_id": 2**64, "sequence_start": True}, "'sequence_id'"),
        ({"sequence_id": 8, "sequence_start": 1}, "'sequence_start'"),
        ({"sequence_id": "", "sequence_start": True}, "non-zero or non-empty correlation ID"),
    ],
)
def test_http_sequence_parameters_of_the_wrong_type_are_refused(server, parameters, message):
    body = {
        "inputs": [{"name": "INPUT", "datatype": "INT32", "shape": [1, 1], "data": [1]}],
        "parameters": parameters,
    }
    request = urllib.request.Request(
        f"http://{server.http_url}/v2/models/{MODEL}/infer", data=json.dumps(body).encode(), method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request, timeout=30)
    assert error.value.code == 400 and message in json.loads(error.value.read())["error"]
