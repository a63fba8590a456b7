"""Dynamic batching through the real server: requests over HTTP coalesce into one call."""

from __future__ import annotations

import json
import urllib.request
from concurrent.futures import ThreadPoolExecutor


def _infer(server, model: str, value: float) -> dict:
    doc = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 1], "data": [value]}]}
    request = urllib.request.Request(
        f"http://{server.http_url}/v2/models/{model}/infer", data=json.dumps(doc).encode()
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        outputs = json.loads(response.read())["outputs"]
    return {o["name"]: o["data"] for o in outputs}


def _burst(server, model: str, count: int = 48) -> list[dict]:
    with ThreadPoolExecutor(16) as pool:
        return list(pool.map(lambda i: _infer(server, model, float(i)), range(count)))


def test_batched_model_joins_concurrent_requests(server):
    results = _burst(server, "sleep_2ms_batched")
    assert [r["OUTPUT0"] for r in results] == [[float(i)] for i in range(48)]  # each gets its own row
    assert max(r["BATCH_ROWS"][0] for r in results) > 1


def test_unbatched_twin_runs_one_request_per_call(server):
    results = _burst(server, "sleep_2ms", count=16)
    assert [r["OUTPUT0"] for r in results] == [[float(i)] for i in range(16)]
    assert {r["BATCH_ROWS"][0] for r in results} == {1}
