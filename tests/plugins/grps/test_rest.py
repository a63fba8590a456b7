"""grps over HTTP against a real server: every endpoint, payload and C4 error."""

from __future__ import annotations

import http.client

import orjson
import pytest

from modelplatform.testing import ServerProcess

from .conftest import call, call_json

OK = {"code": 200, "msg": "OK", "status": "SUCCESS"}
PREDICT = "/grps/v1/infer/predict"
SIMPLE_IN = {
    "gtensors": {
        "tensors": [
            {"name": "INPUT0", "dtype": "DT_INT32", "shape": [1, 16], "flat_int32": list(range(16))},
            {"name": "INPUT1", "dtype": 4, "shape": [1, 16], "flat_int32": [1] * 16},
        ]
    }
}


def test_health_endpoints_answer_success(grps_server: ServerProcess) -> None:
    for kind in ("live", "ready"):
        for method in ("GET", "POST"):
            assert call_json(grps_server, method, f"/grps/v1/health/{kind}") == (200, {"status": OK})


def test_offline_drains_grps_and_core_readiness_then_online_restores(grps_server: ServerProcess) -> None:
    try:
        assert call_json(grps_server, "GET", "/grps/v1/health/offline") == (200, {"status": OK})
        status, body = call_json(grps_server, "GET", "/grps/v1/health/ready")
        assert status == 503 and body["status"]["status"] == "FAILURE"
        assert body["status"]["msg"] == "Service Unavailable"
        assert call(grps_server, "GET", "/v2/health/ready")[0] == 400
        # Offline only drains: inference keeps working.
        assert call_json(grps_server, "POST", PREDICT, {"ndarray": [1.0]})[0] == 200
    finally:
        assert call_json(grps_server, "POST", "/grps/v1/health/online") == (200, {"status": OK})
    assert call_json(grps_server, "GET", "/grps/v1/health/ready")[0] == 200
    assert call(grps_server, "GET", "/v2/health/ready")[0] == 200


def test_str_data_answers_str_data(grps_server: ServerProcess) -> None:
    status, body = call_json(
        grps_server, "POST", PREDICT, {"model": "identity_bytes-1", "str_data": "hello grps"}
    )
    assert status == 200
    assert body == {"status": OK, "str_data": "hello grps"}


def test_bin_data_round_trips_as_octet_stream(grps_server: ServerProcess) -> None:
    raw = b"\x00\xffnot utf-8\x00"
    status, headers, data = call(
        grps_server, "POST", f"{PREDICT}?model=identity_bytes", raw, content_type="application/octet-stream"
    )
    assert status == 200
    assert headers["content-type"] == "application/octet-stream"
    assert data == raw


def test_ndarray_in_and_return_ndarray_out(grps_server: ServerProcess) -> None:
    path = f"{PREDICT}?model=saved_model_half_plus_three-123&return-ndarray=true"
    assert call_json(grps_server, "POST", path, {"ndarray": [1.0, 2.0, 5.0]}) == (
        200,
        {"status": OK, "ndarray": [3.5, 4.0, 5.5]},
    )


def test_ndarray_without_return_ndarray_answers_gtensors(grps_server: ServerProcess) -> None:
    status, body = call_json(
        grps_server, "POST", f"{PREDICT}?model=saved_model_half_plus_three", {"ndarray": [1.0]}
    )
    assert status == 200
    assert body["gtensors"]["tensors"] == [
        {"name": "y", "dtype": "DT_FLOAT32", "shape": [1], "flat_float32": [3.5]}
    ]


def test_gtensors_simple_with_enum_names_and_numbers(grps_server: ServerProcess) -> None:
    status, body = call_json(grps_server, "POST", f"{PREDICT}?model=simple-1", SIMPLE_IN)
    assert status == 200 and body["status"] == OK
    tensors = {t["name"]: t for t in body["gtensors"]["tensors"]}
    assert tensors["OUTPUT0"] == {
        "name": "OUTPUT0",
        "dtype": "DT_INT32",
        "shape": [1, 16],
        "flat_int32": [i + 1 for i in range(16)],
    }
    assert tensors["OUTPUT1"]["flat_int32"] == [i - 1 for i in range(16)]


def test_camel_case_keys_are_accepted(grps_server: ServerProcess) -> None:
    body = {
        "gtensors": {
            "tensors": [{"name": "INPUT0", "dtype": "DT_FLOAT32", "shape": [2], "flatFloat32": [1, 2]}]
        }
    }
    status, reply = call_json(grps_server, "POST", f"{PREDICT}?model=identity_fp32", body)
    assert status == 200
    assert reply["gtensors"]["tensors"][0]["flat_float32"] == [1.0, 2.0]


def test_flat_double_is_an_alias_of_flat_float64(grps_server: ServerProcess) -> None:
    # identity_fp32 takes FP32, so an FP64 tensor is refused by validation - but with
    # its data counted, proving flat_double was read, not silently dropped.
    body = {
        "gtensors": {
            "tensors": [{"name": "INPUT0", "dtype": "DT_FLOAT64", "shape": [2], "flat_double": [1, 2]}]
        }
    }
    status, reply = call_json(grps_server, "POST", f"{PREDICT}?model=identity_fp32", body)
    assert status == 400
    assert "datatype FP32" in reply["status"]["msg"] and "FP64" in reply["status"]["msg"]
    body["gtensors"]["tensors"][0]["flat_float64"] = [1, 2]
    status, reply = call_json(grps_server, "POST", f"{PREDICT}?model=identity_fp32", body)
    assert status == 400 and "both flat_double and flat_float64" in reply["status"]["msg"]


def test_missing_data_for_shape_is_a_clear_400(grps_server: ServerProcess) -> None:
    body = {
        "gtensors": {
            "tensors": [{"name": "INPUT0", "dtype": "DT_FLOAT32", "shape": [3], "flat_float32": [1]}]
        }
    }
    status, reply = call_json(grps_server, "POST", f"{PREDICT}?model=identity_fp32", body)
    assert status == 400
    assert "needs 3 values in flat_float32, got 1" in reply["status"]["msg"]


def test_int64_values_are_json_strings(grps_server: ServerProcess) -> None:
    # stream_counter's unary answer is its last yield; gmap s_i64 feeds the INT32 input.
    status, reply = call_json(
        grps_server, "POST", f"{PREDICT}?model=stream_counter", {"gmap": {"s_i64": {"COUNT": "3"}}}
    )
    assert status == 200
    assert reply["gtensors"]["tensors"][0]["flat_int32"] == [3]


def test_gmap_feeds_named_inputs(grps_server: ServerProcess) -> None:
    status, reply = call_json(
        grps_server, "POST", PREDICT, {"model": "stream_counter", "gmap": {"s_i32": {"COUNT": 2}}}
    )
    assert status == 200 and reply["status"] == OK
    assert reply["gtensors"]["tensors"] == [
        {"name": "INDEX", "dtype": "DT_INT32", "shape": [1], "flat_int32": [2]}
    ]


@pytest.mark.parametrize("value", [3.5, 1e12, -1e12])
def test_gmap_never_truncates_into_an_integer_input(grps_server: ServerProcess, value: float) -> None:
    body = {"model": "stream_counter", "gmap": {"s_f": {"COUNT": value}}}
    status, reply = call_json(grps_server, "POST", PREDICT, body)
    assert status == 400 and reply["status"]["status"] == "FAILURE"
    assert "COUNT" in reply["status"]["msg"] and "whole number" in reply["status"]["msg"]


def test_payload_model_wins_over_query_and_default_applies(grps_server: ServerProcess) -> None:
    status, reply = call_json(
        grps_server, "POST", f"{PREDICT}?model=identity_fp32", {"model": "identity_bytes", "str_data": "x"}
    )
    assert status == 200 and reply["str_data"] == "x"
    status, reply = call_json(
        grps_server, "POST", PREDICT, {"ndarray": [7.0]}
    )  # default_model identity_fp32-1
    assert status == 200
    assert reply["gtensors"]["tensors"][0]["flat_float32"] == [7.0]


@pytest.mark.parametrize(
    ("content_type", "body", "message"),
    [
        ("application/json; charset=utf-8", b'{"str_data": "x"}', "Unsupported content type"),
        ("text/plain", b"x", "Unsupported content type"),
        (None, b'{"str_data": "x"}', "No content type"),
        ("application/json", b'{"foo": 1}', "No legal field in json"),
        ("application/json", b'{"str_data": ""}', "No legal field in json"),
        ("application/json", b'{"bin_data": "eA=="}', "bin_data should use application/octet-stream format."),
        ("application/json", b"{not json", "not valid JSON"),
        ("application/json", b'{"gtensors": {"tensors": [{"dtype": "DT_NOPE"}]}}', "not a supported DT_"),
        ("application/json", b'{"gtensors": {"tensors": [{"shape": "x"}]}}', "invalid GrpsMessage JSON"),
        ("application/json", b'{"model": "identity_fp32", "ndarray": [[1, 2], [3]]}', "rectangular"),
        ("application/json", b'{"model": "identity_fp32", "ndarray": ["a"]}', "rectangular"),
    ],
)
def test_bad_input_is_a_400_failure(
    grps_server: ServerProcess, content_type: str | None, body: bytes, message: str
) -> None:
    status, _, data = call(
        grps_server, "POST", f"{PREDICT}?model=identity_bytes", body, content_type=content_type
    )
    reply = orjson.loads(data)
    assert status == 400
    assert reply["status"]["code"] == 400 and reply["status"]["status"] == "FAILURE"
    assert message in reply["status"]["msg"]


def test_unknown_model_is_404_in_status(grps_server: ServerProcess) -> None:
    status, reply = call_json(grps_server, "POST", f"{PREDICT}?model=nope-3", {"str_data": "x"})
    assert status == 404
    assert reply["status"]["code"] == 404 and reply["status"]["status"] == "FAILURE"
    assert "nope" in reply["status"]["msg"]


def test_return_ndarray_of_non_fp32_output_is_refused(grps_server: ServerProcess) -> None:
    status, reply = call_json(grps_server, "POST", f"{PREDICT}?model=simple&return-ndarray=true", SIMPLE_IN)
    assert status == 400 and "No float32 tensors in output" in reply["status"]["msg"]


def test_streaming_and_return_ndarray_together_are_refused(grps_server: ServerProcess) -> None:
    path = f"{PREDICT}?model=identity_fp32&return-ndarray=true&streaming=true"
    status, reply = call_json(grps_server, "POST", path, {"ndarray": [1.0]})
    assert status == 400 and reply["status"]["status"] == "FAILURE"


def test_server_metadata_is_yaml(grps_server: ServerProcess) -> None:
    import yaml

    for method in ("GET", "POST"):
        status, reply = call_json(grps_server, method, "/grps/v1/metadata/server")
        assert status == 200 and reply["status"] == OK
        meta = yaml.safe_load(reply["str_data"])
        assert meta["server"]["name"] == "modelplatform"
        assert {"name": "simple", "version": "1", "state": "READY"} in meta["models"]


def test_model_metadata_is_yaml_and_errors_are_in_status(grps_server: ServerProcess) -> None:
    import yaml

    status, reply = call_json(grps_server, "POST", "/grps/v1/metadata/model", {"str_data": "simple"})
    assert status == 200
    meta = yaml.safe_load(reply["str_data"])
    assert meta["name"] == "simple" and meta["versions"] == ["1"] and meta["max_batch_size"] == 8
    assert [i["name"] for i in meta["input"]] == ["INPUT0", "INPUT1"]
    status, reply = call_json(grps_server, "POST", "/grps/v1/metadata/model", {"str_data": "nope"})
    assert status == 404 and "Model not found" in reply["status"]["msg"]
    status, reply = call_json(grps_server, "POST", "/grps/v1/metadata/model", {})
    assert status == 400 and "No model name" in reply["status"]["msg"]


def _chunks(server: ServerProcess, path: str, body: dict) -> tuple[int, dict[str, str], list[bytes]]:
    """Read a chunked response chunk by chunk (the raw socket keeps chunk boundaries)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    connection.request("POST", path, body=orjson.dumps(body), headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    headers = {k.lower(): v for k, v in response.getheaders()}
    chunks = []
    fp = response.fp
    while True:
        size = int(fp.readline().strip(), 16)
        if size == 0:
            break
        chunks.append(fp.read(size))
        fp.readline()
    connection.close()
    return response.status, headers, chunks


def test_http_streaming_sends_one_message_per_chunk(grps_server: ServerProcess) -> None:
    status, headers, chunks = _chunks(
        grps_server, f"{PREDICT}?model=stream_counter&streaming=true", {"gmap": {"s_i32": {"COUNT": 4}}}
    )
    assert status == 200
    assert headers["transfer-encoding"] == "chunked"
    assert headers["content-type"] == "application/octet-stream"
    messages = [orjson.loads(c) for c in chunks]
    assert [m["gtensors"]["tensors"][0]["flat_int32"] for m in messages] == [[1], [2], [3], [4]]
    assert all(m["status"] == OK for m in messages)


def test_http_stream_error_ends_with_failure_message(grps_server: ServerProcess) -> None:
    status, _, chunks = _chunks(
        grps_server, f"{PREDICT}?model=stream_fail&streaming=true", {"gmap": {"s_i32": {"COUNT": 1}}}
    )
    assert status == 200
    messages = [orjson.loads(c) for c in chunks]
    assert [m["gtensors"]["tensors"][0]["flat_int32"] for m in messages[:2]] == [[1], [2]]
    assert messages[2]["status"]["status"] == "FAILURE" and messages[2]["status"]["code"] == 500
    assert "broke after two" in messages[2]["status"]["msg"]
    assert len(messages) == 3


def test_streaming_a_plain_model_sends_one_message(grps_server: ServerProcess) -> None:
    status, _, chunks = _chunks(
        grps_server, f"{PREDICT}?model=identity_fp32&streaming=true", {"ndarray": [1.0]}
    )
    assert status == 200
    assert [orjson.loads(c)["gtensors"]["tensors"][0]["flat_float32"] for c in chunks] == [[1.0]]


def test_stream_error_before_the_first_message_keeps_its_status(grps_server: ServerProcess) -> None:
    body = {"gmap": {"s_i32": {"COUNT": 1}, "s_s": {"EXTRA": "x"}}}
    status, reply = call_json(grps_server, "POST", f"{PREDICT}?model=stream_counter&streaming=true", body)
    assert status == 400 and "EXTRA" in reply["status"]["msg"]


def test_custom_model_route_gets_raw_body_and_headers(grps_server: ServerProcess) -> None:
    status, headers, data = call(
        grps_server,
        "POST",
        "/custom/echo",
        b"hi there",
        content_type="text/anything",
        headers={"X-Probe": "p1"},
    )
    assert status == 200
    assert headers["content-type"] == "text/plain"
    assert data == b"HI THERE|p1"
    status, _, data = call(grps_server, "POST", "/custom/echo", b"fail", content_type=None)
    assert status == 500 and b"asked to fail" in data


def test_custom_model_route_streams_chunks(grps_server: ServerProcess) -> None:
    status, headers, data = call(grps_server, "POST", "/stream_counter/count", b"3", content_type=None)
    assert status == 200
    assert headers["transfer-encoding"] == "chunked"
    assert data == b"1\n2\n3\n"


def _raw_counts(server: ServerProcess, model: str) -> tuple[int, int]:
    status, reply = call_json(server, "GET", f"/v2/models/{model}/stats", content_type=None)
    assert status == 200
    stats = reply["model_stats"][0]["inference_stats"]
    return stats["success"]["count"], stats["fail"]["count"]


def test_custom_model_route_calls_count_in_the_model_statistics(grps_server: ServerProcess) -> None:
    success, fail = _raw_counts(grps_server, "custom_echo")
    assert call(grps_server, "POST", "/custom/echo", b"x", content_type=None)[0] == 200
    assert call(grps_server, "POST", "/custom/echo", b"fail", content_type=None)[0] == 500
    assert _raw_counts(grps_server, "custom_echo") == (success + 1, fail + 1)
    streamed = _raw_counts(grps_server, "stream_counter")
    assert call(grps_server, "POST", "/stream_counter/count", b"2", content_type=None)[2] == b"1\n2\n"
    assert _raw_counts(grps_server, "stream_counter") == (streamed[0] + 1, streamed[1])


def test_monitor_series_and_metrics_count_requests(grps_server: ServerProcess) -> None:
    for _ in range(3):
        call_json(grps_server, "POST", f"{PREDICT}?model=identity_bytes", {"str_data": "m"})
    # A failure the statistics count (they do not count bodies grps refuses before the dataplane).
    _chunks(grps_server, f"{PREDICT}?model=stream_fail&streaming=true", {"gmap": {"s_i32": {"COUNT": 1}}})
    import time

    sent = time.time()
    deadline = sent + 30  # the monitor reads the counters once a second, after the second is over
    while (
        call_json(grps_server, "GET", "/grps/v1/monitor/metrics", content_type=None)[1]["sampled_at"] <= sent
    ):
        assert time.time() < deadline, "the monitor was not sampled within 30 s"
        time.sleep(0.2)
    status, series = call_json(grps_server, "GET", "/grps/v1/monitor/series?window=30", content_type=None)
    assert status == 200 and series["interval_secs"] == 1 and len(series["timestamps"]) == 30
    model = series["models"]["identity_bytes"]
    assert sum(model["qps"]) >= 3
    assert max(model["latency_p99_ms"]) > 0
    status, metrics = call_json(grps_server, "GET", "/grps/v1/monitor/metrics", content_type=None)
    assert status == 200 and metrics["models"]["identity_bytes"]["requests_total"] >= 3
    assert metrics["models"]["*"]["failures_total"] >= 1


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [("GET", "/grps/v1/nope", 404), ("GET", PREDICT, 405), ("PATCH", "/grps/v1/health/live", 405)],
)
def test_framework_errors_under_grps_carry_status(
    grps_server: ServerProcess, method: str, path: str, status: int
) -> None:
    code, _, data = call(grps_server, method, path, content_type=None)
    assert code == status
    assert orjson.loads(data)["status"] == {
        "code": status,
        "msg": "Not Found" if status == 404 else "Method Not Allowed",
        "status": "FAILURE",
    }
    code, _, data = call(grps_server, "GET", "/v2/nope", content_type=None)  # other paths keep Triton's shape
    assert (code, orjson.loads(data)) == (404, {"error": "Not Found"})


def test_body_over_the_limit_under_grps_carries_status(tmp_path) -> None:
    with ServerProcess("--model-repository", str(tmp_path), "--max-request-bytes", "1024") as server:
        code, _, data = call(server, "POST", PREDICT, b"x" * 4096, content_type="application/octet-stream")
    assert code == 413
    status = orjson.loads(data)["status"]
    assert status["code"] == 413 and status["status"] == "FAILURE" and "limit" in status["msg"]


def _refused_other(server: ServerProcess, model: str) -> float:
    status, _, data = call(server, "GET", "/metrics", content_type=None)
    assert status == 200
    prefix = f'nv_inference_request_failure{{model="{model}",'
    lines = [
        line for line in data.decode().splitlines() if line.startswith(prefix) and 'reason="OTHER"' in line
    ]
    assert lines, data[:2000]
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines)


def test_custom_model_route_refusals_count_as_failures_other(grps_server: ServerProcess) -> None:
    before = _refused_other(grps_server, "custom_echo")
    status, _, data = call(grps_server, "POST", "/custom/echo?model=identity_bytes", b"x", content_type=None)
    assert status == 400 and b"serves model 'custom_echo'" in data
    assert _refused_other(grps_server, "custom_echo") == before + 1
