"""oip-grpc with the real client: tritonclient.grpc calls every implemented RPC.

The client runs in a subprocess (grpc_probe.py): its bundled copy of Triton's
protos cannot share protobuf's default pool with ours in one process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = Path(__file__).with_name("grpc_probe.py")


@pytest.fixture(scope="module")
def probe(server) -> dict:
    done = subprocess.run(
        [sys.executable, str(PROBE), server.grpc_url], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_health_rpcs(probe):
    assert probe["live"] is True
    assert probe["ready"] is True
    assert probe["model_ready"] is True
    assert probe["unknown_model_ready"] is False


def test_server_metadata_advertises_statistics(probe):
    assert "statistics" in probe["extensions"]
    assert "model_configuration" in probe["extensions"]


def test_model_metadata_and_config(probe):
    meta = probe["model_metadata"]
    assert meta["name"] == "simple"
    assert meta["versions"] == ["1"]
    assert [i["name"] for i in meta["inputs"]] == ["INPUT0", "INPUT1"]
    assert [int(d) for d in meta["inputs"][0]["shape"]] == [-1, 16]
    assert probe["config"] == {"name": "simple", "max_batch_size": 8}


def test_model_infer_raw_contents(probe):
    total, difference = probe["simple"]
    assert total == [[i + 3 for i in range(16)]]
    assert difference == [[i - 3 for i in range(16)]]
    assert probe["fp16"] == [1.5, -2.25, 65504.0]
    assert probe["simple_string"] == [str(2 * i) for i in range(16)]


def test_bytes_with_nuls_and_non_utf8_round_trip(probe):
    assert probe["bytes_roundtrip"] == ["610062", "fffe00", ""]


def test_stream_one_response_per_request_errors_in_band(probe):
    assert probe["stream"]["ids"] == ["ok-0", "ok-1", "ok-2"]
    assert probe["stream"]["errors"] == ["Request for unknown model: 'no_such_model' is not found"]


def test_model_statistics(probe):
    stats = probe["stats"]
    assert stats["name"] == "simple" and stats["version"] == "1"
    assert stats["inference_count"] >= 4  # the probe's infer and 3 streamed; the server may count more
    assert stats["success_count"] <= stats["inference_count"]  # rows >= requests
    assert {"simple", "simple_string", "identity_bytes"} <= set(probe["all_stats_names"])


def test_errors_map_to_status_codes(probe):
    errors = probe["errors"]
    assert errors["unknown_model"].startswith("StatusCode.NOT_FOUND")
    assert errors["wrong_shape"].startswith("StatusCode.INVALID_ARGUMENT")
    assert "INPUT0" in errors["wrong_shape"]
    assert errors["metadata_unknown"].startswith("StatusCode.NOT_FOUND")
    assert errors["stats_unknown"].startswith("StatusCode.NOT_FOUND")
    assert errors["unimplemented"].startswith("StatusCode.UNIMPLEMENTED")
