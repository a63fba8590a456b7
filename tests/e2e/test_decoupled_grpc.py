"""Decoupled and generator models over OIP gRPC ModelStreamInfer, with the real tritonclient.

tritonclient runs in a subprocess (decoupled_probe.py: its protos clash with
ours in one process) against the session server of the bundled repository.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = Path(__file__).with_name("decoupled_probe.py")


@pytest.fixture(scope="module")
def probe(server) -> dict:
    done = subprocess.run(
        [sys.executable, str(PROBE), server.grpc_url], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_decoupled_model_streams_every_response_then_an_empty_final(probe):
    assert probe["words"] == [
        {"id": "w", "value": ["one"], "final": False},
        {"id": "w", "value": ["two"], "final": False},
        {"id": "w", "value": ["three"], "final": False},
        {"id": "w", "value": None, "final": True},
    ]


def test_requests_on_one_stream_each_get_their_responses_in_order(probe):
    by_id: dict[str, list] = {}
    for seen in probe["two_requests"]:
        by_id.setdefault(seen["id"], []).append(seen["value"])
    assert by_id == {"a": [["a1"], ["a2"], ["a3"], None], "b": [["b1"], ["b2"], None]}


def test_a_generator_model_streams_each_yield(probe):
    assert [(s["value"], s["final"]) for s in probe["counter"]] == [
        ([1], False),
        ([2], False),
        ([3], False),
        (None, True),
    ]


def test_a_unary_model_on_the_stream_answers_once_flagged_final(probe):
    (only,) = probe["simple"]
    assert only["id"] == "s" and only["final"] is True
    assert only["value"] == [2 * i for i in range(16)]


def test_without_the_opt_in_no_empty_final_response_follows(probe):
    seen = [(s["value"], s["final"]) for s in probe["plain"]["seen"]]
    assert seen == [(["red"], False), (["green"], False)]
    assert probe["plain"]["extra"] is False


def test_an_error_response_of_a_decoupled_model_arrives_in_band(probe):
    message = "parameter delay_ms must be a number 0..1000, got 'soon'"
    assert probe["bad_words"] == [{"error": message}]


def test_modelinfer_to_a_decoupled_model_gets_tritons_error(probe):
    assert probe["unary"] == (
        "StatusCode.UNIMPLEMENTED ModelInfer RPC doesn't support models with decoupled transaction policy"
    )
