"""python.instance_kind "process": each instance a child process, served for real.

Every wait is bounded (HTTP timeouts, future timeouts, polling deadlines) so
a broken child can fail a test but never hang it.
"""

from __future__ import annotations

import json
import os
import signal
import textwrap
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from modelplatform.testing import ServerProcess

TIMEOUT_S = 60  # per HTTP call: generous, only there so nothing can hang

PROCESS = 'parameters { key: "python.instance_kind" value: { string_value: "%s" } }'

CONFIG = """
name: "{name}"
backend: "python"
input [ {{ name: "IN" data_type: TYPE_FP32 dims: [ -1 ] }} ]
output [
  {{ name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] }},
  {{ name: "PID" data_type: TYPE_INT64 dims: [ 1 ] }},
  {{ name: "START" data_type: TYPE_FP64 dims: [ 1 ] }},
  {{ name: "END" data_type: TYPE_FP64 dims: [ 1 ] }}
]
instance_group [ {{ count: {count} }} ]
{extra}
"""

BATCHED_CONFIG = """
name: "batched"
backend: "python"
max_batch_size: 16
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [
  { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] },
  { name: "PID" data_type: TYPE_INT64 dims: [ 1 ] },
  { name: "ROWS" data_type: TYPE_INT64 dims: [ 1 ] }
]
dynamic_batching { max_queue_delay_microseconds: 200000 }
instance_group [ { count: 2 } ]
%s
""" % (PROCESS % "process")

# Busy-loops in pure Python (holds the GIL) for ~0.3 s; says who ran it and when.
BUSY = """
    import os, time
    import numpy as np

    class Model:
        def infer(self, inputs):
            start = time.time()
            n = 0
            while time.time() - start < 0.3:
                n += 1
            return {"OUT": inputs["IN"] * 2, "PID": np.array([os.getpid()]),
                    "START": np.array([start]), "END": np.array([time.time()])}
"""

# IN[0] < 0: a user exception; IN[0] == 3: the process dies; else the double and the PID.
FLAKY = """
    import os, time
    import numpy as np

    class Model:
        def load(self, config):  # takes one argument: the flexible-argument rule applies
            self.name = config.name

        def infer(self, inputs):
            x = inputs["IN"]
            if (x < 0).any():
                raise ValueError("negative input")
            if x[0] == 3:
                os._exit(3)
            now = time.time()
            return {"OUT": x * 2, "PID": np.array([os.getpid()]),
                    "START": np.array([now]), "END": np.array([now])}
"""

ASYNC = """
    import asyncio, os, time
    import numpy as np

    class Model:
        async def load(self, config, version_dir):
            self.factor = float((version_dir / "factor.txt").read_text())

        async def infer(self, inputs):
            await asyncio.sleep(0.01)
            now = time.time()
            return {"OUT": inputs["IN"] * self.factor, "PID": np.array([os.getpid()]),
                    "START": np.array([now]), "END": np.array([now])}
"""

# Sleeps (the GIL does not matter here): only there so two calls overlap.
SLEEPY = """
    import os, time
    import numpy as np

    class Model:
        def infer(self, inputs):
            start = time.time()
            time.sleep(0.3)
            return {"OUT": inputs["IN"], "PID": np.array([os.getpid()]),
                    "START": np.array([start]), "END": np.array([time.time()])}
"""

# SLEEPY whose unload() fails: the server must stop the process all the same.
DOOMED = (
    SLEEPY
    + """
        def unload(self):
            raise RuntimeError("unload went wrong")
"""
)

# A modelplatform error keeps its status; a return that cannot be pickled fails that call.
STRICT = """
    import os
    import numpy as np
    from modelplatform import InvalidArgument

    class Model:
        def infer(self, inputs):
            x = inputs["IN"]
            if x[0] == 7:
                raise InvalidArgument("seven is not allowed")
            if x[0] == 8:
                return {"OUT": (v for v in x)}
            return {"OUT": x, "PID": np.array([os.getpid()]),
                    "START": np.array([0.0]), "END": np.array([0.0])}
"""

# Loads once: a second load (the restart after a crash) fails.
FRAGILE = """
    import os
    import numpy as np

    class Model:
        def load(self, config, version_dir):
            marker = version_dir / "loaded-once"
            if marker.exists():
                raise RuntimeError("second load refused")
            marker.write_text("")

        def infer(self, inputs):
            if inputs["IN"][0] == 3:
                os._exit(3)
            return {"OUT": inputs["IN"], "PID": np.array([os.getpid()]),
                    "START": np.array([0.0]), "END": np.array([0.0])}
"""

BATCHED = """
    import os
    import numpy as np

    class Model:
        def infer(self, inputs):
            x = inputs["IN"]
            rows = x.shape[0]
            return {"OUT": x * 10 + 1, "PID": np.full((rows, 1), os.getpid()),
                    "ROWS": np.full((rows, 1), rows)}
"""

# Models process mode refuses, or whose load fails in the child: (source, words of the reason).
REFUSED = {
    "bad_kind": (BUSY, PROCESS % "fiber", ["python.instance_kind", "'fiber'", "'process'", "'thread'"]),
    "generator": (
        """
        class Model:
            def infer(self, inputs):
                yield {"OUT": inputs["IN"]}
    """,
        PROCESS % "process",
        ["generator", "python.instance_kind", "'thread'"],
    ),
    "with_http": (
        """
        class Model:
            def infer(self, inputs):
                return {"OUT": inputs["IN"]}

            def http(self, body, headers):
                return body
    """,
        PROCESS % "process",
        ["http()", "python.instance_kind"],
    ),
    "triton": (
        """
        class TritonPythonModel:
            def execute(self, requests):
                return []
    """,
        PROCESS % "process",
        ["TritonPythonModel", "python.instance_kind"],
    ),
    "load_fails": (
        """
        class Model:
            def load(self):
                raise RuntimeError("no weights here")

            def infer(self, inputs):
                return {"OUT": inputs["IN"]}
    """,
        PROCESS % "process",
        ["RuntimeError: no weights here"],
    ),
}


def write_model(root: Path, name: str, source: str, count: int = 1, extra: str = "") -> None:
    (root / name / "1").mkdir(parents=True)
    (root / name / "config.pbtxt").write_text(CONFIG.format(name=name, count=count, extra=extra))
    (root / name / "1" / "model.py").write_text(textwrap.dedent(source))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root: Path = tmp_path_factory.mktemp("process-repo")
    process = PROCESS % "process"
    write_model(root, "busy", BUSY, count=2, extra=process)
    write_model(root, "flaky", FLAKY, extra=process)
    write_model(root, "async_proc", ASYNC, extra=process)
    write_model(root, "strict", STRICT, extra=process)
    (root / "async_proc" / "1" / "factor.txt").write_text("4")
    write_model(root, "fragile", FRAGILE, extra=process)
    write_model(root, "doomed", DOOMED, count=2, extra=process)
    write_model(root, "threaded", BUSY, count=2, extra=PROCESS % "thread")
    (root / "batched" / "1").mkdir(parents=True)
    (root / "batched" / "config.pbtxt").write_text(BATCHED_CONFIG)
    (root / "batched" / "1" / "model.py").write_text(textwrap.dedent(BATCHED))
    for name, (source, extra, _) in REFUSED.items():
        write_model(root, name, source, extra=extra)
    args = (
        "--model-repository",
        str(root),
        "--model-control-mode",
        "explicit",
        "--load-model",
        "*",
        "--no-strict-readiness",
    )
    with ServerProcess(*args, timeout=120) as server:
        yield server


def call(server, path: str, doc: dict | None = None) -> tuple[int, dict | list]:
    data = b"" if doc is None else json.dumps(doc).encode()
    request = urllib.request.Request(f"http://{server.http_url}{path}", data=data, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            body = response.read()
            return response.status, json.loads(body) if body else {}
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def infer(server, model: str, values: list[float]) -> tuple[int, dict]:
    doc = {"inputs": [{"name": "IN", "datatype": "FP32", "shape": [len(values)], "data": values}]}
    return call(server, f"/v2/models/{model}/infer", doc)


def outputs(body: dict) -> dict[str, list]:
    return {o["name"]: o["data"] for o in body["outputs"]}


def concurrently(server, model: str, count: int) -> list[dict[str, list]]:
    """``count`` requests released together; each result's outputs."""
    barrier = threading.Barrier(count, timeout=TIMEOUT_S)

    def one(index: int) -> dict[str, list]:
        barrier.wait()
        status, body = infer(server, model, [float(index)])
        assert status == 200, body
        return outputs(body)

    with ThreadPoolExecutor(count) as pool:
        futures = [pool.submit(one, i) for i in range(count)]
        return [f.result(timeout=TIMEOUT_S) for f in futures]


def index(server) -> dict[str, dict]:
    status, entries = call(server, "/v2/repository/index")
    assert status == 200, entries
    return {e["name"]: e for e in entries}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_exited(pid: int, deadline_s: float = 30) -> bool:
    """Whether ``pid`` ended: gone, or a zombie (not collected yet) with no thread left running.

    A killed process's main thread shows as a zombie before its other threads
    have exited; until they have, its parent cannot collect it yet.
    """
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0]
            if state in "ZX" and os.listdir(f"/proc/{pid}/task") == [str(pid)]:
                return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.02)
    return False


def wait_gone(pids: set[int], deadline_s: float = 30) -> set[int]:
    """The PIDs still alive once they are all gone or the deadline passed."""
    deadline = time.monotonic() + deadline_s
    while (left := {p for p in pids if alive(p)}) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def test_two_process_instances_run_pure_python_at_the_same_time(served):
    first, second = concurrently(served, "busy", 2)
    assert first["OUT"] == [0.0] and second["OUT"] == [2.0]
    pids = {first["PID"][0], second["PID"][0]}
    assert len(pids) == 2 and served.process.pid not in pids
    # Both calls were running at once: each started before the other ended.
    assert first["START"][0] < second["END"][0] and second["START"][0] < first["END"][0]


def test_thread_instances_run_in_the_server_process(served):
    # The default kind, spelled out: unchanged, the model runs in the server.
    status, body = infer(served, "threaded", [1.0])
    assert status == 200 and outputs(body)["PID"] == [served.process.pid]


def test_user_exception_in_the_child_fails_only_that_request(served):
    status, body = infer(served, "flaky", [-1.0])
    assert status == 500
    assert body["error"] == "model 'flaky' failed: ValueError: negative input"
    status, body = infer(served, "flaky", [1.5])
    assert status == 200 and outputs(body)["OUT"] == [3.0]


def test_child_exit_fails_that_request_and_the_next_gets_a_fresh_process(served):
    status, body = infer(served, "flaky", [1.0])
    assert status == 200
    before = outputs(body)["PID"][0]
    status, body = infer(served, "flaky", [3.0])
    assert status == 500
    assert body["error"] == "model 'flaky' instance 0: its process exited with code 3"
    assert not alive(before)
    status, body = infer(served, "flaky", [2.0])
    assert status == 200 and outputs(body)["OUT"] == [4.0]
    assert outputs(body)["PID"][0] not in (before, served.process.pid)


def test_a_restart_that_fails_to_load_fails_the_call_with_the_reason(served):
    assert infer(served, "fragile", [1.0])[0] == 200
    assert infer(served, "fragile", [3.0])[0] == 500
    expected = "model 'fragile' instance 0: restarting its process failed: RuntimeError: second load refused"
    for _ in range(2):  # every call tries again; none hangs
        status, body = infer(served, "fragile", [1.0])
        assert (status, body["error"]) == (500, expected)


def test_child_killed_while_idle_is_replaced_on_the_next_call(served):
    status, body = infer(served, "strict", [1.0])
    assert status == 200
    before = outputs(body)["PID"][0]
    os.kill(before, signal.SIGKILL)
    assert wait_exited(before)
    status, body = infer(served, "strict", [2.0])
    assert status == 200 and outputs(body)["OUT"] == [2.0], body
    assert outputs(body)["PID"][0] not in (before, served.process.pid)


def test_platform_error_keeps_its_status_and_unpicklable_output_fails_alone(served):
    status, body = infer(served, "strict", [7.0])
    assert status == 400 and body["error"] == "seven is not allowed"
    status, body = infer(served, "strict", [8.0])
    assert status == 500
    assert body["error"].startswith("model 'strict' failed: TypeError: ")
    assert "generator" in body["error"]
    assert infer(served, "strict", [1.0])[0] == 200


def test_async_infer_and_load_run_in_the_child(served):
    status, body = infer(served, "async_proc", [1.0, 2.0])
    assert status == 200
    assert outputs(body)["OUT"] == [4.0, 8.0]
    assert outputs(body)["PID"][0] != served.process.pid


def test_dynamic_batching_gives_each_request_its_own_rows(served):
    count = 12
    barrier = threading.Barrier(count, timeout=TIMEOUT_S)

    def one(value: float) -> tuple[float, dict[str, list]]:
        barrier.wait()
        doc = {"inputs": [{"name": "IN", "datatype": "FP32", "shape": [1, 1], "data": [value]}]}
        status, body = call(served, "/v2/models/batched/infer", doc)
        assert status == 200, body
        return value, outputs(body)

    with ThreadPoolExecutor(count) as pool:
        futures = [pool.submit(one, float(i)) for i in range(count)]
        results = [f.result(timeout=TIMEOUT_S) for f in futures]
    for value, result in results:
        assert result["OUT"] == [value * 10 + 1]
    assert served.process.pid not in {r["PID"][0] for _, r in results}
    # The batcher joined requests into one infer() call in the child.
    assert max(r["ROWS"][0] for _, r in results) > 1


def test_unload_stops_every_child(served):
    pids = {r["PID"][0] for r in concurrently(served, "doomed", 2)}
    assert len(pids) == 2 and all(alive(p) for p in pids)
    status, body = call(served, "/v2/repository/models/doomed/unload", {"parameters": {}})
    assert status == 200, body
    assert wait_gone(pids) == set()  # even though its unload() raised
    assert index(served)["doomed"]["state"] == "UNAVAILABLE"
    assert "unload went wrong" in served.log()
    assert infer(served, "busy", [1.0])[0] == 200  # the other models still serve


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_load_failure_reason_is_visible(served, name):
    entry = index(served)[name]
    assert entry["state"] == "UNAVAILABLE"
    for words in REFUSED[name][2]:
        assert words in entry["reason"], entry["reason"]
    status, body = infer(served, name, [1.0])
    # Issue 13: a model that failed to load is not there (404), and the answer says why.
    assert status == 404 and REFUSED[name][2][0] in body["error"]
    assert body["error"].startswith(f"Request for unknown model: '{name}' has no available versions: ")


def test_invalid_kind_fails_a_load_request_with_the_reason(served):
    status, body = call(served, "/v2/repository/models/bad_kind/load", {"parameters": {}})
    assert status != 200
    assert "must be one of ['process', 'thread'], got 'fiber'" in body["error"]


def test_server_shutdown_stops_every_child(tmp_path):
    write_model(tmp_path, "pair", SLEEPY, count=2, extra=PROCESS % "process")
    with ServerProcess("--model-repository", str(tmp_path), timeout=120) as server:
        pids = {r["PID"][0] for r in concurrently(server, "pair", 2)}
        assert len(pids) == 2 and server.process.pid not in pids
        assert server.stop() == 0
    assert wait_gone(pids) == set()
