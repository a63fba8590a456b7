"""Warmup through a real server (issue 13, point 4): not READY until warm, failures in the index.

``slow`` is a python model whose first call (its warmup) takes 1.5 s and
leaves a marker file, and which answers how many calls it has had, so the
first client request shows whether it found the model warm. ``fails`` raises
on its warmup sample; it is loaded through the repository API once the
server is up, so server readiness depends on ``slow`` alone.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
from pathlib import Path

import numpy as np
import tritonclient.http as httpclient

from modelplatform.testing import ServerProcess

SLOW_MODEL = """
import time
from pathlib import Path

import numpy as np


class Model:
    def load(self, config, version_dir):
        self.marker = Path(version_dir) / "warming"
        self.calls = 0

    def infer(self, inputs):
        if self.calls == 0:  # the warmup: slow, as a first call that compiles would be
            self.marker.write_text("")
            time.sleep(1.5)
        self.calls += 1
        return {"calls": np.array([self.calls], dtype=np.int64)}
"""

FAILING_MODEL = """
class Model:
    def infer(self, inputs):
        raise RuntimeError("no warm welcome")
"""

CONFIG = """
backend: "python"
input [ { name: "x" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "calls" data_type: TYPE_INT64 dims: [ 1 ] } ]
model_warmup {
  name: "first call"
  inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 1 ] zero_data: true } }
}
"""


def write_model(root: Path, name: str, code: str) -> Path:
    (root / name / "1").mkdir(parents=True)
    (root / name / "config.pbtxt").write_text(CONFIG)
    (root / name / "1" / "model.py").write_text(code)
    return root / name / "1"


def call(port: int, method: str, path: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path, body=b"" if method == "POST" else None)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def test_not_ready_during_a_slow_warmup_and_the_first_request_finds_the_model_warm(tmp_path: Path) -> None:
    slow = write_model(tmp_path, "slow", SLOW_MODEL)
    write_model(tmp_path, "fails", FAILING_MODEL)
    server = ServerProcess(
        "--model-repository",
        str(tmp_path),
        "--plugins",
        "python,oip-rest,binary-data,repository",
        "--model-control-mode",
        "explicit",
        "--load-model",
        "slow",
    )
    starting = threading.Thread(target=server.__enter__)
    starting.start()
    try:
        wait_for(slow / "warming")  # the warmup runs now, for 1.5 s
        assert call(server.http_port, "GET", "/v2/health/live")[0] == 200
        assert call(server.http_port, "GET", "/v2/health/ready")[0] != 200
        assert call(server.http_port, "GET", "/v2/models/slow/ready")[0] != 200
        status, body = call(server.http_port, "POST", "/v2/repository/index")
        assert status == 200
        assert {"name": "slow", "version": "1", "state": "LOADING"} in json.loads(body)
        starting.join(timeout=90)
        assert call(server.http_port, "GET", "/v2/health/ready")[0] == 200
        assert call(server.http_port, "GET", "/v2/models/slow/ready")[0] == 200

        client = httpclient.InferenceServerClient(server.http_url)
        x = httpclient.InferInput("x", [1], "FP32")
        x.set_data_from_numpy(np.zeros(1, np.float32))
        started = time.monotonic()
        result = client.infer("slow", [x])
        assert result.as_numpy("calls").tolist() == [2]  # warm: the warmup was call 1
        assert time.monotonic() - started < 1.0  # generous: the slow call was the warmup's

        status, body = call(server.http_port, "POST", "/v2/repository/models/fails/load")
        assert status == 400 and b"warmup sample 'first call' failed" in body
        index = {e["name"]: e for e in json.loads(call(server.http_port, "POST", "/v2/repository/index")[1])}
        assert index["fails"]["state"] == "UNAVAILABLE"
        assert "warmup sample 'first call' failed on instance 0" in index["fails"]["reason"]
        assert "no warm welcome" in index["fails"]["reason"]
        warmed = re.search(r"model_warmed_up.*?duration_ms\W+([\d.]+)", server.log())
        assert warmed and float(warmed.group(1)) >= 1400  # the warmup time is logged
        stats = client.get_inference_statistics("slow")["model_stats"][0]
        assert stats["inference_count"] == 1  # warmup is not an inference
    finally:
        starting.join(timeout=90)
        server.stop()
