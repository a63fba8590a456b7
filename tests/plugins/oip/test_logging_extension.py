"""Triton's logging extension: GET/POST /v2/logging change the log level of a running server."""

from __future__ import annotations

import http.client
import json
import time

import pytest

from modelplatform.testing import ServerProcess

from ...conftest import MODEL_REPOSITORY

OIP_BODY = json.dumps({"inputs": [
    {"name": n, "datatype": "INT32", "shape": [1, 16], "data": list(range(16))} for n in ("INPUT0", "INPUT1")
]})  # fmt: skip


def call(server: ServerProcess, method: str, path: str, body: str | None = None) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        connection.request(method, path, body=body, headers={"Content-Type": "application/json"})
        reply = connection.getresponse()
        data = reply.read()
        return reply.status, json.loads(data) if data else {}
    finally:
        connection.close()


@pytest.fixture(scope="module")
def server():
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple")
    with ServerProcess(*args) as running:
        yield running


def test_logging_is_an_advertised_extension(server: ServerProcess) -> None:
    assert "logging" in call(server, "GET", "/v2")[1]["extensions"]


def test_get_answers_tritons_fields(server: ServerProcess) -> None:
    status, settings = call(server, "GET", "/v2/logging")
    assert status == 200
    assert settings == {"log_file": "", "log_info": True, "log_warning": True, "log_error": True,
                        "log_verbose_level": 0, "log_format": "default"}  # fmt: skip


def test_log_info_switches_request_events_off_and_on_live(server: ServerProcess) -> None:
    """A failed request logs ``request_failed`` at info; ``log_info: false`` silences it at
    once (loggers already bound follow the change), ``true`` brings it back."""
    status, settings = call(server, "POST", "/v2/logging", json.dumps({"log_info": False}))
    assert status == 200 and settings["log_info"] is False
    start = len(server.log())
    call(server, "POST", "/v2/models/simple/infer", '{"inputs": []}')
    time.sleep(0.5)
    assert "request_failed" not in server.log()[start:]
    call(server, "POST", "/v2/logging", json.dumps({"log_info": True, "log_verbose_level": 1}))
    call(server, "POST", "/v2/models/simple/infer", '{"inputs": []}')
    deadline = time.monotonic() + 10
    while "request_failed" not in server.log()[start:] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "request_failed" in server.log()[start:]
    status, settings = call(server, "POST", "/v2/logging", json.dumps({"log_verbose_level": 0}))
    assert status == 200 and settings["log_verbose_level"] == 0 and settings["log_info"] is True


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('{"log_verbose_level": "1"}', "log_verbose_level"),
        ('{"log_verbose_level": true}', "log_verbose_level"),
        ('{"log_info": 1}', "log_info"),
        ('{"log_file": "/tmp/x.log"}', "log_file"),
        ('{"log_format": "xml"}', "log_format"),
        ('{"no_such_setting": 1}', "no_such_setting"),
        ("[1, 2]", "JSON object"),
        ("{not json", "parse"),
    ],
)
def test_bad_settings_are_400_and_change_nothing(server: ServerProcess, body: str, words: str) -> None:
    before = call(server, "GET", "/v2/logging")[1]
    status, error = call(server, "POST", "/v2/logging", body)
    assert status == 400 and words in error["error"]
    assert call(server, "GET", "/v2/logging")[1] == before


def test_a_huge_body_is_413(server: ServerProcess) -> None:
    status, _ = call(server, "POST", "/v2/logging", json.dumps({"log_info": True, "pad": "x" * 100_000}))
    assert status == 413
