"""System shared memory with Triton's own clients, unchanged (issue 19 points 1, 3, 5).

tritonclient.utils.shared_memory creates the regions, tritonclient.http and
tritonclient.grpc register them and infer through them; bad registrations
and bad request parameters are refused naming the region; unregistering
while a request reads a region leaves that request its mapping until it
ends, and nothing of a region stays mapped after it is unregistered.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
import uuid

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException

from modelplatform.testing import ServerProcess

from ..conftest import MODEL_REPOSITORY
from .shm_support import get, mapped_keys, post, repository_with_slow_model

CLIENTS = {"http": httpclient, "grpc": grpcclient}


@pytest.fixture(scope="module")
def shm_server(tmp_path_factory):
    repository = repository_with_slow_model(tmp_path_factory.mktemp("shm-repo"))
    args = ("--model-repository", str(repository), "--allow-client-shm", "--max-shm-regions", "6")
    with ServerProcess(*args) as process:
        yield process


@pytest.fixture
def regions():
    """Regions created in this test, destroyed after it (keys unique per test)."""
    made = []

    def make(name: str, size: int):
        handle = shm.create_shared_memory_region(name, f"/mp_test_{uuid.uuid4().hex[:12]}", size)
        made.append(handle)
        return handle

    yield make
    for handle in made:
        shm.destroy_shared_memory_region(handle)


def client(server, protocol):
    url = server.http_url if protocol == "http" else server.grpc_url
    return CLIENTS[protocol].InferenceServerClient(url)


def key_of(handle) -> str:
    return handle._shm_key


def region_list(response) -> list:
    return response if isinstance(response, list) else list(response.regions.values())


@pytest.fixture(autouse=True)
def no_regions_left(request):
    yield
    if "shm_server" in request.fixturenames:
        server = request.getfixturevalue("shm_server")
        post(server.http_port, "/v2/systemsharedmemory/unregister")


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_input_and_output_travel_through_regions(shm_server, regions, protocol):
    triton = client(shm_server, protocol)
    data = np.random.default_rng(3).random(4096, dtype=np.float32)
    given, answer = regions("in", data.nbytes), regions("out", data.nbytes + 64)
    shm.set_shared_memory_region(given, [data])
    triton.register_system_shared_memory("in", key_of(given), data.nbytes)
    triton.register_system_shared_memory("out", key_of(answer), data.nbytes + 64)
    source = CLIENTS[protocol].InferInput("INPUT0", [data.size], "FP32")
    source.set_shared_memory("in", data.nbytes)
    wanted = CLIENTS[protocol].InferRequestedOutput("OUTPUT0")
    wanted.set_shared_memory("out", data.nbytes)
    result = triton.infer("identity_fp32", [source], outputs=[wanted])
    assert np.array_equal(shm.get_contents_as_numpy(answer, np.float32, [data.size]), data)
    if protocol == "http":  # the output is listed without data, as Triton answers
        assert result.get_response()["outputs"] == [
            {"name": "OUTPUT0", "datatype": "FP32", "shape": [data.size]}
        ]
    else:
        assert list(result.get_response().raw_output_contents) == [b""]
        assert list(result.get_response().outputs[0].shape) == [data.size]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_offsets_and_a_mixed_request(shm_server, regions, protocol):
    """The input at an offset of a region, the output in the response body (tritonclient's default)."""
    triton = client(shm_server, protocol)
    data = np.arange(100, dtype=np.float32)
    handle = regions("both", 8192)
    shm.set_shared_memory_region(handle, [data], offset=4096)
    triton.register_system_shared_memory("both", key_of(handle), 8192)
    source = CLIENTS[protocol].InferInput("INPUT0", [100], "FP32")
    source.set_shared_memory("both", data.nbytes, offset=4096)
    result = triton.infer("identity_fp32", [source])
    assert np.array_equal(result.as_numpy("OUTPUT0"), data)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_status_register_twice_and_unregister(shm_server, regions, protocol):
    triton = client(shm_server, protocol)
    handle = regions("a", 1024)
    triton.register_system_shared_memory("a", key_of(handle), 512, offset=256)
    triton.register_system_shared_memory("b", key_of(handle), 1024)
    status = {r["name"] if isinstance(r, dict) else r.name: r for r in region_list(
        triton.get_system_shared_memory_status())}  # fmt: skip
    assert set(status) == {"a", "b"}
    with pytest.raises(InferenceServerException, match="shared memory region 'a' already in manager"):
        triton.register_system_shared_memory("a", key_of(handle), 1024)
    triton.unregister_system_shared_memory("a")
    triton.unregister_system_shared_memory("never-registered")  # Triton: not an error
    assert [r["name"] if isinstance(r, dict) else r.name
            for r in region_list(triton.get_system_shared_memory_status())] == ["b"]  # fmt: skip
    with pytest.raises(InferenceServerException, match="Unable to find system shared memory region: 'a'"):
        triton.get_system_shared_memory_status("a")
    triton.unregister_system_shared_memory()
    assert region_list(triton.get_system_shared_memory_status()) == []


def test_http_status_shape(shm_server, regions):
    handle = regions("s", 8192)
    assert post(shm_server.http_port, "/v2/systemsharedmemory/region/s/register",
                {"key": key_of(handle), "offset": 4096, "byte_size": 100}) == (200, None)  # fmt: skip
    status = [{"name": "s", "key": key_of(handle), "offset": 4096, "byte_size": 100}]
    assert get(shm_server.http_port, "/v2/systemsharedmemory/status") == (200, status)
    assert get(shm_server.http_port, "/v2/systemsharedmemory/region/s/status") == (200, status)
    assert get(shm_server.http_port, "/v2/systemsharedmemory/region/zz/status")[0] == 404
    assert post(shm_server.http_port, "/v2/systemsharedmemory/region/s/unregister") == (200, None)
    assert get(shm_server.http_port, "/v2/systemsharedmemory/status") == (200, [])


BAD_KEYS = {
    "no leading slash": "mp_test_plain",
    "another slash": "/mp_test/sub",
    "parent folder": "/..",
    "reserved prefix": "/modelplatform_internal",
    "too long": "/" + "k" * 300,
    "empty": "",
    "not a string": 7,
}


@pytest.mark.parametrize("case", sorted(BAD_KEYS))
def test_keys_that_are_not_posix_names_are_refused_naming_the_region(shm_server, case):
    body = {"key": BAD_KEYS[case], "offset": 0, "byte_size": 16}
    status, reply = post(shm_server.http_port, "/v2/systemsharedmemory/region/badkey/register", body)
    assert status == 400, reply
    assert "'badkey'" in reply["error"]


def test_windows_outside_the_object_are_refused(shm_server, regions):
    handle = regions("w", 4096)
    for body in (
        {"key": key_of(handle), "offset": 0, "byte_size": 4097},
        {"key": key_of(handle), "offset": 4000, "byte_size": 100},
        {"key": key_of(handle), "offset": -1, "byte_size": 10},
        {"key": key_of(handle), "offset": 0, "byte_size": 0},
        {"key": key_of(handle), "offset": 0, "byte_size": "10"},
        {"key": "/mp_test_does_not_exist", "offset": 0, "byte_size": 10},
    ):
        status, reply = post(shm_server.http_port, "/v2/systemsharedmemory/region/win/register", body)
        assert status == 400 and "'win'" in reply["error"], (body, reply)
    assert post(shm_server.http_port, "/v2/systemsharedmemory/region/win/register", b"[1]")[0] == 400
    assert get(shm_server.http_port, "/v2/systemsharedmemory/status") == (200, [])


def test_grpc_refusals_are_invalid_argument_and_already_exists(shm_server, regions):
    triton = grpcclient.InferenceServerClient(shm_server.grpc_url)
    with pytest.raises(InferenceServerException) as refused:
        triton.register_system_shared_memory("g", "/modelplatform_x", 16)
    assert refused.value.status() == "StatusCode.INVALID_ARGUMENT" and "'g'" in refused.value.message()
    handle = regions("g", 64)
    triton.register_system_shared_memory("g", key_of(handle), 64)
    with pytest.raises(InferenceServerException) as twice:
        triton.register_system_shared_memory("g", key_of(handle), 64)
    assert twice.value.status() == "StatusCode.ALREADY_EXISTS"


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_request_parameters_out_of_bounds_are_refused_naming_the_region(shm_server, regions, protocol):
    triton = client(shm_server, protocol)
    module = CLIENTS[protocol]
    handle = regions("small", 64)
    triton.register_system_shared_memory("small", key_of(handle), 64)
    cases = [
        ("unknown", 64, 0, None, "Unable to find shared memory region: 'unknown'"),
        ("small", 128, 0, None, "region 'small'"),  # 32 floats need 128 bytes
        ("small", 64, 32, None, "region 'small'"),  # past the end of the window
    ]
    for region, size, offset, _, words in cases:
        source = module.InferInput("INPUT0", [size // 4], "FP32")
        source.set_shared_memory(region, size, offset=offset)
        with pytest.raises(InferenceServerException, match=words):
            triton.infer("identity_fp32", [source])
    source = module.InferInput("INPUT0", [16], "FP32")
    source.set_shared_memory("small", 64)
    wanted = module.InferRequestedOutput("OUTPUT0")
    wanted.set_shared_memory("small", 32)  # too small for the 64-byte output
    with pytest.raises(InferenceServerException, match="should be at least 64 bytes"):
        triton.infer("identity_fp32", [source], outputs=[wanted])


def test_region_count_is_bounded(shm_server, regions):
    handle = regions("many", 64)
    for index in range(6):
        assert post(shm_server.http_port, f"/v2/systemsharedmemory/region/r{index}/register",
                    {"key": key_of(handle), "offset": 0, "byte_size": 64})[0] == 200  # fmt: skip
    status, reply = post(shm_server.http_port, "/v2/systemsharedmemory/region/r6/register",
                         {"key": key_of(handle), "offset": 0, "byte_size": 64})  # fmt: skip
    assert status == 400 and "'r6'" in reply["error"] and "--max-shm-regions" in reply["error"]


def test_unregister_during_a_request_keeps_its_mapping_until_it_ends(shm_server, regions):
    data = np.arange(2048, dtype=np.float32)
    handle = regions("busy", data.nbytes)
    shm.set_shared_memory_region(handle, [data])
    post(shm_server.http_port, "/v2/systemsharedmemory/region/busy/register",
         {"key": key_of(handle), "offset": 0, "byte_size": data.nbytes})  # fmt: skip
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [data.size], "parameters": {
        "shared_memory_region": "busy", "shared_memory_byte_size": data.nbytes}}]}  # fmt: skip
    answers = []
    path = "/v2/models/slow_identity_fp32/infer"
    request = threading.Thread(target=lambda: answers.append(post(shm_server.http_port, path, body)))
    request.start()
    time.sleep(0.8)  # the slow model holds a view of the region now
    assert post(shm_server.http_port, "/v2/systemsharedmemory/region/busy/unregister") == (200, None)
    assert get(shm_server.http_port, "/v2/systemsharedmemory/status") == (200, [])
    assert mapped_keys(shm_server.process.pid, key_of(handle))  # still mapped for the request
    request.join(timeout=60)
    status, reply = answers[0]
    assert status == 200 and reply["outputs"][0]["data"] == data.tolist()
    deadline = time.monotonic() + 10
    while mapped_keys(shm_server.process.pid, key_of(handle)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mapped_keys(shm_server.process.pid, key_of(handle)) == []


DYING_CLIENT = """
import os, sys
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
handle = shm.create_shared_memory_region("dying", sys.argv[2], 1 << 20)
httpclient.InferenceServerClient(sys.argv[1]).register_system_shared_memory("dying", sys.argv[2], 1 << 20)
print("registered", flush=True)
os.kill(os.getpid(), 9)
"""


def test_a_dead_clients_region_leaves_no_mapping_after_unregister_all(shm_server):
    key = f"/mp_test_dying_{uuid.uuid4().hex[:8]}"
    code = textwrap.dedent(DYING_CLIENT)
    done = subprocess.run([sys.executable, "-c", code, shm_server.http_url, key],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    try:
        assert "registered" in done.stdout, done.stderr
        assert done.returncode == -9
        assert mapped_keys(shm_server.process.pid, key)  # the server mapped it
        assert post(shm_server.http_port, "/v2/systemsharedmemory/unregister") == (200, None)
        assert mapped_keys(shm_server.process.pid, key) == []
    finally:
        subprocess.run(["rm", "-f", f"/dev/shm/{key[1:]}"], check=False)


def test_bad_request_parameters_are_400_not_500(shm_server):
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [4],
                        "parameters": {"shared_memory_region": "x"}}]}  # fmt: skip
    for parameters in (
        {"shared_memory_region": "x"},
        {"shared_memory_region": 5, "shared_memory_byte_size": 16},
        {"shared_memory_region": "x", "shared_memory_byte_size": -1},
        {"shared_memory_region": "x", "shared_memory_byte_size": 16, "shared_memory_offset": "0"},
    ):
        body["inputs"][0]["parameters"] = parameters
        status, reply = post(shm_server.http_port, "/v2/models/identity_fp32/infer", body)
        assert status == 400, reply
    body["inputs"][0]["data"] = [1, 2, 3, 4]
    body["inputs"][0]["parameters"] = {"shared_memory_region": "x", "shared_memory_byte_size": 16}
    assert post(shm_server.http_port, "/v2/models/identity_fp32/infer", body)[0] == 400


# ---- off by default, CUDA without a GPU ----


@pytest.fixture(scope="module")
def default_server():
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "identity_fp32")
    with ServerProcess(*args) as process:
        yield process


def test_client_shared_memory_is_off_by_default(default_server):
    port = default_server.http_port
    assert "system_shared_memory" not in get(port, "/v2")[1]["extensions"]
    assert get(port, "/v2/systemsharedmemory/status") == (200, [])
    status, reply = post(port, "/v2/systemsharedmemory/region/x/register",
                         {"key": "/mp_test_x", "offset": 0, "byte_size": 16})  # fmt: skip
    assert status == 501 and "Client shared memory is disabled" in reply["error"]
    triton = grpcclient.InferenceServerClient(default_server.grpc_url)
    with pytest.raises(InferenceServerException, match="Client shared memory is disabled"):
        triton.unregister_system_shared_memory()
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [4], "parameters": {
        "shared_memory_region": "x", "shared_memory_byte_size": 16}}]}  # fmt: skip
    status, reply = post(port, "/v2/models/identity_fp32/infer", body)
    assert status == 400 and "'x'" in reply["error"] and "--allow-client-shm" in reply["error"]


@pytest.mark.parametrize("fixture", ["default_server", "shm_server"])
def test_cuda_shared_memory_without_a_gpu_answers_like_triton(request, fixture):
    server = request.getfixturevalue(fixture)
    assert "cuda_shared_memory" not in get(server.http_port, "/v2")[1]["extensions"]
    assert get(server.http_port, "/v2/cudasharedmemory/status") == (200, [])
    body = {"raw_handle": {"b64": "AAAA"}, "device_id": 0, "byte_size": 16}
    status, reply = post(server.http_port, "/v2/cudasharedmemory/region/c/register", body)
    assert status == 400 and "'c', GPUs not supported" in reply["error"]
    assert post(server.http_port, "/v2/cudasharedmemory/unregister") == (200, None)
    triton = grpcclient.InferenceServerClient(server.grpc_url)
    with pytest.raises(InferenceServerException) as refused:
        triton.register_cuda_shared_memory("c", b"\0" * 64, 0, 16)
    assert refused.value.status() == "StatusCode.INVALID_ARGUMENT"
