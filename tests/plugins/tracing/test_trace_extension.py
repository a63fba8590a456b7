"""Triton's trace extension (``/v2[/models/{m}]/trace/setting``, gRPC ``TraceSetting``) and the
gRPC ``LogSettings`` call, against a running server, tritonclient and a local OTLP receiver:
the settings change which requests become spans while the server runs."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from modelplatform.testing import ServerProcess

from ...conftest import MODEL_REPOSITORY
from .conftest import Receiver
from .test_traces import OIP_BODY, PARENT

PROBE = Path(__file__).with_name("settings_probe.py")
DEFAULTS = {"trace_level": ["TIMESTAMPS"], "trace_rate": "1000", "trace_count": "-1",
            "log_frequency": "0", "trace_file": "", "trace_mode": "opentelemetry"}  # fmt: skip
FP32_BODY = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [2], "data": [1.0, 2.0]}]})


@pytest.fixture(scope="module")
def server(receiver: Receiver) -> Iterator[ServerProcess]:
    endpoint = f"http://127.0.0.1:{receiver.server_address[1]}/v1/traces"
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple",
            "--load-model", "identity_fp32", "--trace-otlp-endpoint", endpoint)  # fmt: skip
    with ServerProcess(*args, env={"OTEL_BSP_SCHEDULE_DELAY": "100"}) as running:
        yield running


@pytest.fixture()
def client(server: ServerProcess) -> Iterator[httpclient.InferenceServerClient]:
    with httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}") as triton:
        yield triton
    # Every test starts from the start-up settings.
    with httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}") as triton:
        for model in ("simple", "identity_fp32"):
            triton.update_trace_settings(
                model, {"trace_level": None, "trace_rate": None, "trace_count": None}
            )
        triton.update_trace_settings(settings={"trace_level": None, "trace_rate": None, "trace_count": None})


def call(server: ServerProcess, method: str, path: str, body: str | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, dict]:  # fmt: skip
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        reply = connection.getresponse()
        data = reply.read()
        return reply.status, json.loads(data) if data else {}
    finally:
        connection.close()


def infer(server: ServerProcess, trace_id: str, sampled: bool = False, model: str = "simple") -> None:
    """One inference whose span, if written, lands in ``trace_id``; unsampled: the settings decide."""
    traceparent = f"00-{trace_id}-{PARENT}-{'01' if sampled else '00'}"
    body = OIP_BODY if model == "simple" else FP32_BODY
    status, _ = call(server, "POST", f"/v2/models/{model}/infer", body, {"traceparent": traceparent})
    assert status == 200


def traced(receiver: Receiver, trace_ids: list[str], settle: float = 1.5) -> set[str]:
    """Which of ``trace_ids`` have a span, after several export rounds (100 ms each)."""
    time.sleep(settle)
    with receiver.lock:
        return {s.trace_id.hex() for s in receiver.spans} & set(trace_ids)


def ids(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i:04x}".ljust(32, "0") for i in range(n)]


def test_trace_is_advertised_and_get_answers_tritons_fields(server: ServerProcess, client) -> None:
    assert "trace" in client.get_server_metadata()["extensions"]
    assert client.get_trace_settings() == DEFAULTS
    assert client.get_trace_settings("simple") == DEFAULTS


def test_rate_1_traces_every_request_and_off_traces_none(
    server: ServerProcess, receiver: Receiver, client
) -> None:
    assert client.update_trace_settings(settings={"trace_rate": "1"})["trace_rate"] == "1"
    every = ids("a1", 3)
    for trace_id in every:
        infer(server, trace_id)
    assert traced(receiver, every) == set(every)

    answer = client.update_trace_settings(settings={"trace_level": ["OFF"]})
    assert answer["trace_level"] == ["OFF"]
    none = ids("a2", 3)
    for trace_id in none:
        infer(server, trace_id, sampled=True)  # OFF wins over the caller's sampled flag
    assert traced(receiver, none) == set()


def test_trace_count_limits_the_traced_requests_and_counts_down(
    server: ServerProcess, receiver: Receiver, client
) -> None:
    client.update_trace_settings(settings={"trace_rate": "1", "trace_count": "2"})
    sent = ids("b1", 5)
    for trace_id in sent:
        infer(server, trace_id)
    assert len(traced(receiver, sent)) == 2
    assert client.get_trace_settings()["trace_count"] == "0"
    forced = ids("b2", 1)
    infer(server, forced[0], sampled=True)  # the caller's sampled flag passes a spent count
    assert traced(receiver, forced) == set(forced)


def test_a_model_setting_overrides_the_global_one_and_null_falls_back(
    server: ServerProcess, receiver: Receiver, client
) -> None:
    client.update_trace_settings(settings={"trace_level": ["OFF"]})
    answer = client.update_trace_settings("simple", {"trace_level": ["TIMESTAMPS"], "trace_rate": "1"})
    assert answer["trace_level"] == ["TIMESTAMPS"] and answer["trace_rate"] == "1"
    assert client.get_trace_settings()["trace_level"] == ["OFF"]
    simple, other = ids("c1", 2), ids("c2", 2)
    for trace_id in simple:
        infer(server, trace_id)
    for trace_id in other:
        infer(server, trace_id, model="identity_fp32")
    assert traced(receiver, simple + other) == set(simple)

    answer = client.update_trace_settings("simple", {"trace_level": None})
    assert answer["trace_level"] == ["OFF"] and answer["trace_rate"] == "1"  # rate still its own
    after = ids("c3", 2)
    for trace_id in after:
        infer(server, trace_id)
    assert traced(receiver, after) == set()


def test_tensors_is_taken_and_listed_in_tritons_order(server: ServerProcess, client) -> None:
    answer = client.update_trace_settings(settings={"trace_level": ["TENSORS", "TIMESTAMPS"]})
    assert answer["trace_level"] == ["TIMESTAMPS", "TENSORS"]


def test_a_global_change_reaches_models_that_follow_it(server: ServerProcess, client) -> None:
    client.update_trace_settings("simple", {"trace_count": "5"})
    client.update_trace_settings(settings={"trace_rate": "3"})
    answer = client.get_trace_settings("simple")
    assert answer["trace_rate"] == "3" and answer["trace_count"] == "5"


@pytest.mark.parametrize(
    ("path", "body", "status", "words"),
    [
        ("/v2/trace/setting", {"trace_rate": "often"}, 400, "Unable to parse 'trace_rate', got: often"),
        ("/v2/trace/setting", {"trace_rate": "0"}, 400, "out of range [ 1, 4294967295 ]"),
        ("/v2/trace/setting", {"trace_count": "-2"}, 400, "Expecting value >= -1, got: -2"),
        (
            "/v2/trace/setting",
            {"trace_level": ["OFF", "TIMESTAMPS"]},
            400,
            "Expect only one trace level 'OFF'",
        ),
        ("/v2/trace/setting", {"trace_level": ["LOUD"]}, 400, "got: LOUD"),
        ("/v2/trace/setting", {"trace_level": []}, 400, "at least one level"),
        ("/v2/trace/setting", {"trace_level": 1.5}, 400, "a string, a list of strings or null"),
        ("/v2/trace/setting", {"trace_rate": ["1", "2"]}, 400, "expect only 1 value for 'trace_rate'"),
        ("/v2/trace/setting", {"log_frequency": "10"}, 400, "log_frequency"),
        ("/v2/trace/setting", {"trace_mode": "triton"}, 400, "trace_mode"),
        ("/v2/trace/setting", {"trace_rate": "1", "no_such": "1"}, 400, "no_such"),
        (
            "/v2/trace/setting",
            {"trace_file": "/tmp/trace.json"},
            501,
            "trace file location can not be updated",
        ),
        ("/v2/trace/setting", [1, 2], 400, "JSON object"),
        ("/v2/models/no_such_model/trace/setting", {}, 400, "Request for unknown model : no_such_model"),
    ],
)
def test_bad_settings_are_refused_in_tritons_words_and_change_nothing(
    server: ServerProcess, client, path: str, body: object, status: int, words: str
) -> None:
    before = client.get_trace_settings()
    got, error = call(server, "POST", path, json.dumps(body))
    assert got == status and words in error["error"]
    assert client.get_trace_settings() == before


def test_unparseable_and_huge_bodies(server: ServerProcess, client) -> None:
    assert call(server, "POST", "/v2/trace/setting", "{not json")[0] == 400
    assert call(server, "POST", "/v2/trace/setting", json.dumps({"pad": "x" * 100_000}))[0] == 413
    assert call(server, "GET", "/v2/models/simple/versions/1/trace/setting")[0] == 404
    assert client.get_trace_settings() == DEFAULTS


def test_tritonclient_refusal_is_an_exception(server: ServerProcess, client) -> None:
    with pytest.raises(InferenceServerException, match="Unable to parse 'trace_count'"):
        client.update_trace_settings(settings={"trace_count": "many"})


def test_grpc_trace_setting_and_log_settings_through_tritonclient(server: ServerProcess) -> None:
    done = subprocess.run(
        [sys.executable, str(PROBE), server.grpc_url], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert "trace" in found["extensions"] and "logging" in found["extensions"]
    values = {name: setting["value"] for name, setting in found["trace_global"].items()}
    assert values == {name: v if isinstance(v, list) else [v] for name, v in DEFAULTS.items()}
    assert found["trace_model_set"]["trace_rate"]["value"] == ["7"]
    assert found["trace_model_get"]["trace_rate"]["value"] == ["7"]
    assert found["trace_model_cleared"]["trace_rate"]["value"] == ["1000"]
    assert found["trace_bad_rate"] == "StatusCode.INVALID_ARGUMENT Unable to parse 'trace_rate', got: often"
    assert found["trace_bad_levels"].startswith("StatusCode.INVALID_ARGUMENT Expect only one trace level")
    assert found["trace_file"].startswith("StatusCode.UNIMPLEMENTED trace file location")
    assert found["trace_unknown_model"].startswith("StatusCode.INVALID_ARGUMENT Request for unknown model")
    assert found["log_get"]["log_verbose_level"] == {"uint32_param": 0}
    assert found["log_get"]["log_info"] == {"bool_param": True}
    assert found["log_set"]["log_verbose_level"] == {"uint32_param": 1}
    assert found["log_set"]["log_info"] == {"bool_param": False}
    assert (
        found["log_bad_type"]
        == "StatusCode.INVALID_ARGUMENT logging setting 'log_info' must be true or false"
    )
    assert found["log_file"].startswith("StatusCode.INVALID_ARGUMENT logging setting 'log_file'")
    assert found["log_after_errors"] == found["log_set"]
    # The HTTP extension reads the same live settings the gRPC call changed (the probe restored them).
    assert call(server, "GET", "/v2/logging")[1]["log_verbose_level"] == 0


def test_without_an_endpoint_tracing_is_off_and_cannot_be_switched_on() -> None:
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple")
    with ServerProcess(*args) as running:
        status, answer = call(running, "GET", "/v2/trace/setting")
        assert status == 200 and answer["trace_level"] == ["OFF"]
        status, error = call(
            running, "POST", "/v2/trace/setting", json.dumps({"trace_level": ["TIMESTAMPS"]})
        )
        assert status == 400 and "no OTLP endpoint" in error["error"]
        assert (
            call(running, "POST", "/v2/trace/setting", json.dumps({"trace_rate": "5"}))[1]["trace_rate"]
            == "5"
        )


def test_trace_is_not_advertised_without_the_plugin() -> None:
    args = (
        "--model-repository",
        str(MODEL_REPOSITORY),
        "--load-model",
        "simple",
        "--disable-plugin",
        "tracing",
    )
    with ServerProcess(*args) as running:
        assert "trace" not in call(running, "GET", "/v2")[1]["extensions"]
        assert call(running, "GET", "/v2/trace/setting")[0] == 404
