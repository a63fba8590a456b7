"""The seed's worked example, verbatim against `platform serve` (bundled repository)."""

from __future__ import annotations

from .http import call, get, post

HALF = "/v1/models/saved_model_half_plus_three"


def test_status_shows_version_123_available(server) -> None:
    reply = get(server.http_url, HALF)
    assert reply.status == 200
    assert reply.content_type == "application/json"
    assert reply.json() == {
        "model_version_status": [
            {"version": "123", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}
        ]
    }
    assert reply.text.startswith('{\n "model_version_status": [\n  {\n   "version": "123",')


def test_predict_instances(server) -> None:
    reply = post(server.http_url, f"{HALF}:predict", '{"instances": [1.0,2.0,5.0]}')
    assert reply.status == 200
    assert reply.json() == {"predictions": [3.5, 4.0, 5.5]}
    assert reply.text == '{\n    "predictions": [3.5, 4.0, 5.5\n    ]\n}'


def test_regress_on_its_signature(server) -> None:
    body = '{"signature_name": "tensorflow/serving/regress", "examples": [{"x": 1.0}, {"x": 2.0}]}'
    reply = post(server.http_url, f"{HALF}:regress", body)
    assert reply.status == 200
    assert reply.json() == {"results": [3.5, 4.0]}
    assert reply.text == '{\n    "results": [3.5, 4.0]\n}'


def test_unknown_model_is_404(server) -> None:
    reply = call(server.http_url, "POST", "/v1/models/half:predict", '{"instances": [1.0,5.0]}')
    assert reply.status == 404
    assert reply.content_type == "application/json"
    assert reply.text == '{ "error": "Servable not found for request: Latest(half)" }'
