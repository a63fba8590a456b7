"""GET /v2/models[/{m}[/versions/{v}]]/stats: the shape perf_analyzer reads (protocol-notes A6)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import numpy as np

DURATIONS = ("success", "fail", "queue", "compute_input", "compute_infer", "compute_output",
             "cache_hit", "cache_miss")  # fmt: skip


def _get(server, path: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://{server.http_url}{path}", timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _infer_simple(server) -> None:
    data = np.arange(16).tolist()
    body = {"inputs": [{"name": n, "datatype": "INT32", "shape": [1, 16], "data": data}
                       for n in ("INPUT0", "INPUT1")]}  # fmt: skip
    request = urllib.request.Request(
        f"http://{server.http_url}/v2/models/simple/infer", data=json.dumps(body).encode()
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        assert reply.status == 200


def test_statistics_advertised(server):
    assert "statistics" in _get(server, "/v2")[1]["extensions"]


def test_model_stats_shape_and_counts(server):
    before = _get(server, "/v2/models/simple/stats")[1]["model_stats"][0]
    _infer_simple(server)
    _infer_simple(server)
    status, doc = _get(server, "/v2/models/simple/versions/1/stats")
    assert status == 200
    (entry,) = doc["model_stats"]
    assert entry["name"] == "simple" and entry["version"] == "1"
    assert entry["inference_count"] == before["inference_count"] + 2
    assert entry["execution_count"] == before["execution_count"] + 2
    stats = entry["inference_stats"]
    for key in DURATIONS:
        assert set(stats[key]) == {"count", "ns"}
        assert all(isinstance(v, int) for v in stats[key].values())
    # requests succeeded <= inferences: inference_count counts batch rows (Triton)
    assert stats["success"]["count"] <= entry["inference_count"]
    assert stats["success"]["ns"] > before["inference_stats"]["success"]["ns"]
    assert stats["queue"]["count"] == stats["compute_infer"]["count"] >= 2
    assert entry["last_inference"] > 0
    assert isinstance(entry["batch_stats"], list) and entry["memory_usage"] == []


def test_all_models_stats(server):
    status, doc = _get(server, "/v2/models/stats")
    assert status == 200
    names = {entry["name"] for entry in doc["model_stats"]}
    assert {"simple", "simple_string", "identity_fp16", "identity_bytes"} <= names
    assert all(entry["version"].isdigit() for entry in doc["model_stats"])


def test_stats_errors(server):
    status, doc = _get(server, "/v2/models/no_such_model/stats")
    assert status == 404 and "no_such_model" in doc["error"]
    status, doc = _get(server, "/v2/models/simple/versions/9/stats")
    assert status == 404 and set(doc) == {"error"}
