"""The Model Repository Extension over HTTP (raw and tritonclient) and gRPC (tritonclient)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from modelplatform.testing import ServerProcess

from .helpers import grpc_client, index, infer, load, post, timed_get, unload
from .models import MODEL_PY, config_json, write_model


@pytest.fixture(scope="module")
def loads_log(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("logs") / "counter_loads.txt"


@pytest.fixture(scope="module")
def repo(tmp_path_factory, loads_log) -> Path:
    root = tmp_path_factory.mktemp("repo")
    write_model(root, "echo", factor="2")
    write_model(root, "counter", log_path=str(loads_log))
    write_model(root, "slow", load_delay="0.6")
    write_model(root, "never", ballast_mb="16")  # 200 cycles: a leak would be 3 GiB
    return root


@pytest.fixture(scope="module")
def server(repo):
    with ServerProcess(
        "--model-repository",
        str(repo),
        "--load-model",
        "echo",
        "--load-model",
        "counter",
        "--allow-file-upload",
    ) as process:
        yield process


@pytest.fixture
def client(server):
    return httpclient.InferenceServerClient(server.http_url)


def test_extensions_are_advertised(server):
    _, metadata = post(server.http_url, "/v2", None, method="GET")
    assert {"model_repository", "model_repository(unload_dependents)"} <= set(metadata["extensions"])


def test_index_accepts_an_empty_body_and_filters_ready(server):
    entries = index(server.http_url)
    assert entries["never"] == {"name": "never"}  # never loaded: name only
    assert entries["echo"] == {"name": "echo", "version": "1", "state": "READY"}
    ready = index(server.http_url, ready=True)
    assert "never" not in ready and "echo" in ready
    assert set(index(server.http_url, ready=False)) == set(entries)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b'{"ready": "yes"}', "'ready' must be a boolean"),
        (b"{not json", "failed to parse"),
        (b"[1, 2]", "must be a JSON object"),
    ],
)
def test_index_bad_bodies_are_400(server, body, fragment):
    status, error = post(server.http_url, "/v2/repository/index", body)
    assert status == 400 and fragment in error["error"]


def test_repository_segment_and_methods(server, repo):
    status, entries = post(server.http_url, f"/v2/repository/{repo.name}/index")
    assert status == 200 and any(e["name"] == "echo" for e in entries)
    status, _ = post(server.http_url, f"/v2/repository/{repo.name}/models/echo/load", b"{}")
    assert status == 200
    status, error = post(server.http_url, "/v2/repository/elsewhere/models/echo/load", b"{}")
    assert status == 501 and "elsewhere" in error["error"]
    status, error = post(server.http_url, "/v2/repository/models/%2E%2E/load", b"{}")
    assert status in (400, 404), error
    status, error = post(server.http_url, "/v2/repository/index", None, method="GET")
    assert status == 405 and error == {"error": "Method Not Allowed"}


@pytest.mark.parametrize(
    ("action", "body", "fragment"),
    [
        ("load", b'{"parameters": {"config": 5}}', "'config' must be a string"),
        ("load", b'{"parameters": []}', "'parameters' must be a JSON object"),
        ("load", b'{"parameters": {"file:1/model.py": 7, "config": "{}"}}', "base64 string"),
        ("unload", b'{"parameters": {"unload_dependents": "yes"}}', "must be a boolean"),
        ("unload", b"[]", "must be a JSON object"),
    ],
)
def test_bad_load_and_unload_bodies_are_400(server, action, body, fragment):
    status, error = post(server.http_url, f"/v2/repository/models/echo/{action}", body)
    assert status == 400 and fragment in error["error"]
    assert index(server.http_url)["echo"]["state"] == "READY"


def test_tritonclient_http_unload_load_index(client):
    client.unload_model("echo", unload_dependents=True)
    entry = next(e for e in client.get_model_repository_index() if e["name"] == "echo")
    assert entry == {"name": "echo", "version": "1", "state": "UNAVAILABLE", "reason": "unloaded"}
    assert not client.is_model_ready("echo")
    client.load_model("echo")
    assert client.is_model_ready("echo")
    with pytest.raises(InferenceServerException, match="unknown model: 'nothing'") as caught:
        client.load_model("nothing")
    assert caught.value.status() == "404"


def test_load_with_a_config_override_then_back_to_disk(server, client):
    client.load_model("echo", config=config_json(factor="10"))
    assert infer(server.http_url, "echo", [1.0, 2.0])[1]["outputs"][0]["data"] == [10.0, 20.0]
    assert client.get_model_config("echo")["backend"] == "python"  # kept from the folder
    client.load_model("echo")
    assert infer(server.http_url, "echo", [1.0, 2.0])[1]["outputs"][0]["data"] == [2.0, 4.0]
    with pytest.raises(InferenceServerException, match="invalid model configuration JSON"):
        client.load_model("echo", config="{not json")


def test_load_with_files_builds_a_new_model(server, client):
    files = {"file:3/model.py": MODEL_PY.encode()}
    client.load_model("uploaded", config=config_json(factor="4"), files=files)
    assert infer(server.http_url, "uploaded", [1.0])[1] == {
        "model_name": "uploaded",
        "model_version": "3",
        "outputs": [{"name": "OUTPUT0", "datatype": "FP32", "shape": [1], "data": [4.0]}],
    }
    client.unload_model("uploaded")
    assert "model_folder_removed" in server.log()
    with pytest.raises(InferenceServerException, match="'config' is required"):
        client.load_model("uploaded", files=files)
    for bad in ("file:1/../../escape.py", "file:x/model.py", "file:/etc/passwd"):
        status, error = post(
            server.http_url,
            "/v2/repository/models/uploaded/load",
            json.dumps({"parameters": {"config": config_json(), bad: ""}}).encode(),
        )
        assert status == 400 and bad in error["error"]
    for bad in ("file:1/mo\u0000del.py", "file:1/a\nb.py"):  # the fuzzer's NUL was a 500
        status, error = post(
            server.http_url,
            "/v2/repository/models/uploaded/load",
            json.dumps({"parameters": {"config": config_json(), bad: ""}}).encode(),
        )
        assert status == 400 and "control character" in error["error"]
    status, error = post(
        server.http_url,
        "/v2/repository/models/uploaded/load",
        json.dumps({"parameters": {"config": config_json(), "file:1/m.py": "%%%"}}).encode(),
    )
    assert status == 400 and "base64" in error["error"]


def test_concurrent_loads_load_once(server, client, loads_log):
    client_url = server.http_url
    assert loads_log.read_text().count("load") == 1
    client.unload_model("counter")
    threads = [threading.Thread(target=load, args=(client_url, "counter")) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert loads_log.read_text().count("load") == 2 and client.is_model_ready("counter")
    for _ in range(3):
        client.load_model("counter")  # unchanged and READY: nothing to do
    assert loads_log.read_text().count("load") == 2


def _later(delay: float, action, *args) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(delay), action(*args)))
    thread.start()
    return thread


def test_load_unload_race_ends_in_the_last_requests_state(server):
    steps = [(0.0, load), (0.15, unload), (0.3, load), (0.45, unload)]
    threads = [_later(delay, action, server.http_url, "slow") for delay, action in steps]
    for thread in threads:
        thread.join()
    assert index(server.http_url)["slow"]["state"] == "UNAVAILABLE"
    threads = [_later(delay, action, server.http_url, "slow") for delay, action in steps[1:]]
    threads.append(_later(0.6, load, server.http_url, "slow"))  # unload, load, unload, load
    for thread in threads:
        thread.join()
    assert index(server.http_url)["slow"]["state"] == "READY"


def test_health_and_inference_answer_during_a_slow_load(server, client):
    client.unload_model("slow")
    loading = threading.Thread(
        target=load, args=(server.http_url, "slow"), kwargs={"config": config_json(load_delay="1.5")}
    )
    loading.start()
    time.sleep(0.1)
    timings = []
    while loading.is_alive():
        for path in ("/v2/health/live", "/v2/health/ready", "/v2/models/echo"):
            status, seconds = timed_get(server.http_url, path)
            assert status == 200
            timings.append(seconds)
        started = time.perf_counter()
        assert infer(server.http_url, "echo", [1.0])[0] == 200
        timings.append(time.perf_counter() - started)
        time.sleep(0.02)
    print(f"during a 1.5 s load: {len(timings)} calls, slowest {max(timings) * 1000:.1f} ms")
    assert len(timings) > 20 and max(timings) < 0.1, max(timings)
    assert index(server.http_url)["slow"]["state"] == "READY"


def test_hammering_a_model_during_reloads_sees_no_error(server, client):
    errors, answers, stop = [], [], threading.Event()

    def hammer() -> None:
        while not stop.is_set():
            status, body = infer(server.http_url, "echo", [1.0, 1.0])
            if status == 200:
                answers.append(body["outputs"][0]["data"][0])
            else:
                errors.append((status, body))

    clients = [threading.Thread(target=hammer) for _ in range(4)]
    for thread in clients:
        thread.start()
    for factor in ("3", "5", "7", "2"):
        time.sleep(0.1)
        client.load_model("echo", config=config_json(factor=factor, load_delay="0.1"))
    time.sleep(0.1)
    stop.set()
    for thread in clients:
        thread.join()
    assert errors == []
    assert {3.0, 7.0, 2.0} <= set(answers) and len(answers) > 50


def test_a_failed_reload_keeps_the_previous_version_serving(server, client):
    client.load_model("echo", config=config_json(factor="6"))
    with pytest.raises(InferenceServerException, match="disk full") as caught:
        client.load_model("echo", config=config_json(fail="disk full"))
    assert caught.value.status() == "400"
    assert infer(server.http_url, "echo", [1.0])[1]["outputs"][0]["data"] == [6.0]
    entry = index(server.http_url)["echo"]
    assert entry["state"] == "READY" and "disk full" in entry["reason"]
    assert timed_get(server.http_url, "/v2/health/ready")[0] == 200
    client.load_model("echo")
    assert "reason" not in index(server.http_url)["echo"]


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_200_load_unload_cycles_keep_memory_flat(server):
    def cycles(count: int) -> None:
        for _ in range(count):
            assert post(server.http_url, "/v2/repository/models/never/load", b"{}")[0] == 200
            assert post(server.http_url, "/v2/repository/models/never/unload", b"{}")[0] == 200

    cycles(30)  # warm-up: allocator pools, caches
    before = _rss_kib(server.process.pid)
    cycles(100)
    middle = _rss_kib(server.process.pid)
    cycles(100)
    grown, late = _rss_kib(server.process.pid) - before, _rss_kib(server.process.pid) - middle
    print(f"RSS before {before} KiB, growth after 100 cycles {middle - before}, after 200 {grown} KiB")
    # Each load holds 16 MiB: a leak would add 1.6 GiB per 100 cycles. glibc may keep one
    # freed 16 MiB block on its heap, early or late, so each bound allows that one block
    # plus 8 MiB of noise: far below one leaked load per cycle, and flat from 100 to 200.
    assert grown < (16 + 8) * 1024, f"RSS grew by {grown} KiB over 200 load/unload cycles"
    assert late < (16 + 8) * 1024, f"RSS grew by {late} KiB over the last 100 cycles"


def test_tritonclient_grpc_index_load_unload(server):
    result = grpc_client(
        server.grpc_url,
        f"""
        client.unload_model("echo", unload_dependents=True)
        after_unload = client.get_model_repository_index(as_json=True)["models"]
        client.load_model("echo", config={config_json(factor="9")!r})
        ready = client.is_model_ready("echo")
        client.load_model("grpc_uploaded", config={config_json(factor="5")!r},
                          files={{"file:1/model.py": {MODEL_PY.encode()!r}}})
        try:
            client.load_model("..")
            traversal = None
        except InferenceServerException as e:
            traversal = e.status()
        try:
            client.load_model("grpc_uploaded", files={{"file:1/model.py": b""}})
            error = None
        except InferenceServerException as e:
            error = [e.status(), e.message()]
        ready_only = client.get_model_repository_index(as_json=True)
        result = [after_unload, ready, error, ready_only, traversal]
    """,
    )
    after_unload, ready, error, ready_only, traversal = result
    assert traversal == "StatusCode.INVALID_ARGUMENT"
    assert {"name": "echo", "version": "1", "state": "UNAVAILABLE", "reason": "unloaded"} in after_unload
    assert ready is True
    assert error[0] == "StatusCode.INVALID_ARGUMENT" and "'config' is required" in error[1]
    assert {m["name"] for m in ready_only["models"] if m.get("state") == "READY"} >= {"echo", "grpc_uploaded"}
    assert infer(server.http_url, "echo", [1.0])[1]["outputs"][0]["data"] == [9.0]
    assert infer(server.http_url, "grpc_uploaded", [1.0])[1]["outputs"][0]["data"] == [5.0]
