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
import tritonclient.utils.shared_memory as shm

from modelplatform.testing import ServerProcess

from ..conftest import MODEL_REPOSITORY
from .shm_support import get, mapped_keys, post, repository_with_slow_model, run_client

PROTOCOLS = ["http", "grpc"]


@pytest.fixture(scope="module")
def shm_server(tmp_path_factory):
    repository = repository_with_slow_model(tmp_path_factory.mktemp("shm-repo"))
    args = ("--model-repository", str(repository), "--allow-client-shm", "--max-shm-regions", "6")
    with ServerProcess(*args) as process:
        yield process


@pytest.fixture
def regions(shm_server):
    """Regions created in this test (keys unique per test); all unregistered and destroyed after it."""
    made = []

    def make(name: str, size: int):
        handle = shm.create_shared_memory_region(name, f"/mp_test_{uuid.uuid4().hex[:12]}", size)
        made.append(handle)
        return handle

    yield make
    post(shm_server.http_port, "/v2/systemsharedmemory/unregister")
    for handle in made:
        shm.destroy_shared_memory_region(handle)


def url(server, protocol: str) -> str:
    return server.http_url if protocol == "http" else server.grpc_url


def key_of(handle) -> str:
    return handle._shm_key


IN_AND_OUT = """
triton.register_system_shared_memory("in", args["in"], args["size"])
triton.register_system_shared_memory("out", args["out"], args["size"] + 64)
source = module.InferInput("INPUT0", [args["size"] // 4], "FP32")
source.set_shared_memory("in", args["size"])
wanted = module.InferRequestedOutput("OUTPUT0")
wanted.set_shared_memory("out", args["size"])
response = triton.infer("identity_fp32", [source], outputs=[wanted]).get_response()
if isinstance(response, dict):
    print(json.dumps({"outputs": response["outputs"]}))
else:
    print(json.dumps({"raw": [r.hex() for r in response.raw_output_contents],
                      "shape": list(response.outputs[0].shape)}))
"""


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_input_and_output_travel_through_regions(shm_server, regions, protocol):
    data = np.random.default_rng(3).random(4096, dtype=np.float32)
    given, answer = regions("in", data.nbytes), regions("out", data.nbytes + 64)
    shm.set_shared_memory_region(given, [data])
    reply = run_client(protocol, url(shm_server, protocol), IN_AND_OUT,
                       size=data.nbytes, **{"in": key_of(given), "out": key_of(answer)})  # fmt: skip
    assert np.array_equal(shm.get_contents_as_numpy(answer, np.float32, [data.size]), data)
    if protocol == "http":  # the output is listed without data, as Triton answers
        assert reply["outputs"] == [{"name": "OUTPUT0", "datatype": "FP32", "shape": [data.size]}]
    else:  # an empty raw entry keeps raw_output_contents aligned with outputs
        assert reply == {"raw": [""], "shape": [data.size]}


OFFSET = """
triton.register_system_shared_memory("both", args["key"], 8192)
source = module.InferInput("INPUT0", [100], "FP32")
source.set_shared_memory("both", 400, offset=4096)
result = triton.infer("identity_fp32", [source])
assert np.array_equal(result.as_numpy("OUTPUT0"), np.arange(100, dtype=np.float32))
"""


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_input_at_an_offset_and_the_output_in_the_answer(shm_server, regions, protocol):
    handle = regions("both", 8192)
    shm.set_shared_memory_region(handle, [np.arange(100, dtype=np.float32)], offset=4096)
    run_client(protocol, url(shm_server, protocol), OFFSET, key=key_of(handle))


MIXED = """
triton.register_system_shared_memory("first", args["key"], 64)
shared = module.InferInput("INPUT0", [1, 16], "INT32")
shared.set_shared_memory("first", 64)
sent = module.InferInput("INPUT1", [1, 16], "INT32")
sent.set_data_from_numpy(np.full((1, 16), 3, np.int32))
result = triton.infer("simple", [shared, sent])
first = np.arange(16, dtype=np.int32).reshape(1, 16)
assert np.array_equal(result.as_numpy("OUTPUT0"), first + 3)
assert np.array_equal(result.as_numpy("OUTPUT1"), first - 3)
"""


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_one_input_in_a_region_and_one_in_the_request(shm_server, regions, protocol):
    """gRPC: the one raw_input_contents entry belongs to INPUT1, the input not in a region."""
    handle = regions("first", 64)
    shm.set_shared_memory_region(handle, [np.arange(16, dtype=np.int32).reshape(1, 16)])
    run_client(protocol, url(shm_server, protocol), MIXED, key=key_of(handle))


REGISTRY = """
def names(status):
    regions = status if isinstance(status, list) else list(status.regions.values())
    return sorted(r["name"] if isinstance(r, dict) else r.name for r in regions)

triton.register_system_shared_memory("a", args["key"], 512, offset=256)
triton.register_system_shared_memory("b", args["key"], 1024)
assert names(triton.get_system_shared_memory_status()) == ["a", "b"]
with pytest.raises(InferenceServerException, match="shared memory region 'a' already in manager"):
    triton.register_system_shared_memory("a", args["key"], 1024)
triton.unregister_system_shared_memory("a")
triton.unregister_system_shared_memory("never-registered")  # Triton: not an error
assert names(triton.get_system_shared_memory_status()) == ["b"]
with pytest.raises(InferenceServerException, match="Unable to find system shared memory region: 'a'"):
    triton.get_system_shared_memory_status("a")
triton.unregister_system_shared_memory()
assert names(triton.get_system_shared_memory_status()) == []
"""


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_status_register_twice_and_unregister(shm_server, regions, protocol):
    handle = regions("a", 1024)
    run_client(protocol, url(shm_server, protocol), REGISTRY, key=key_of(handle))


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


GRPC_CODES = """
with pytest.raises(InferenceServerException) as refused:
    triton.register_system_shared_memory("g", "/modelplatform_x", 16)
assert refused.value.status() == "StatusCode.INVALID_ARGUMENT" and "'g'" in refused.value.message()
triton.register_system_shared_memory("g", args["key"], 64)
with pytest.raises(InferenceServerException) as twice:
    triton.register_system_shared_memory("g", args["key"], 64)
assert twice.value.status() == "StatusCode.ALREADY_EXISTS"
"""


def test_grpc_refusals_are_invalid_argument_and_already_exists(shm_server, regions):
    handle = regions("g", 64)
    run_client("grpc", shm_server.grpc_url, GRPC_CODES, key=key_of(handle))


OUT_OF_BOUNDS = """
triton.register_system_shared_memory("small", args["key"], 64)
cases = [
    ("unknown", 64, 0, "Unable to find shared memory region: 'unknown'"),
    ("small", 128, 0, "region 'small'"),  # 32 floats need 128 bytes
    ("small", 64, 32, "region 'small'"),  # past the end of the window
]
for region, size, offset, words in cases:
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
"""


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_request_parameters_out_of_bounds_are_refused_naming_the_region(shm_server, regions, protocol):
    handle = regions("small", 64)
    run_client(protocol, url(shm_server, protocol), OUT_OF_BOUNDS, key=key_of(handle))


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


DISABLED_GRPC = """
with pytest.raises(InferenceServerException) as refused:
    triton.unregister_system_shared_memory()
assert refused.value.status() == "StatusCode.UNIMPLEMENTED"
assert "Client shared memory is disabled" in refused.value.message()
"""


def test_client_shared_memory_is_off_by_default(default_server):
    port = default_server.http_port
    assert "system_shared_memory" not in get(port, "/v2")[1]["extensions"]
    assert get(port, "/v2/systemsharedmemory/status") == (200, [])
    status, reply = post(port, "/v2/systemsharedmemory/region/x/register",
                         {"key": "/mp_test_x", "offset": 0, "byte_size": 16})  # fmt: skip
    assert status == 501 and "Client shared memory is disabled" in reply["error"]
    run_client("grpc", default_server.grpc_url, DISABLED_GRPC)
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [4], "parameters": {
        "shared_memory_region": "x", "shared_memory_byte_size": 16}}]}  # fmt: skip
    status, reply = post(port, "/v2/models/identity_fp32/infer", body)
    assert status == 400 and "'x'" in reply["error"] and "--allow-client-shm" in reply["error"]


CUDA_GRPC = """
with pytest.raises(InferenceServerException) as refused:
    triton.register_cuda_shared_memory("c", b"\\0" * 64, 0, 16)
assert refused.value.status() == "StatusCode.INVALID_ARGUMENT"
assert "GPUs not supported" in refused.value.message()
assert len(triton.get_cuda_shared_memory_status().regions) == 0
"""


@pytest.mark.parametrize("fixture", ["default_server", "shm_server"])
def test_cuda_shared_memory_without_a_gpu_answers_like_triton(request, fixture):
    server = request.getfixturevalue(fixture)
    assert "cuda_shared_memory" not in get(server.http_port, "/v2")[1]["extensions"]
    assert get(server.http_port, "/v2/cudasharedmemory/status") == (200, [])
    body = {"raw_handle": {"b64": "AAAA"}, "device_id": 0, "byte_size": 16}
    status, reply = post(server.http_port, "/v2/cudasharedmemory/region/c/register", body)
    assert status == 400 and "'c', GPUs not supported" in reply["error"]
    assert post(server.http_port, "/v2/cudasharedmemory/unregister") == (200, None)
    run_client("grpc", server.grpc_url, CUDA_GRPC)
