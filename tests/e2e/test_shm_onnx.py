"""ONNX Runtime writes outputs bound to shared-memory regions itself (issue 19 point 2).

A real server serves tiny ONNX graphs (tests/plugins/onnxruntime/graphs.py);
Triton's own clients (tritonclient.http and .grpc, in a child as
shm_support.run_client does) ask for output ``Y`` in a region. Whether ONNX
Runtime could write it straight there (shape fixed or following the input's)
or it took the copy (a shape known only after the run, a dynamic batch), the
region holds the answer and the response carries no data for it; a region
too small is refused naming the output.

Then the proof that nothing is copied: the first 64 MiB request of a fresh
session, written into a region, raises the server's peak private memory by
much less than 64 MiB, while the same request through a graph whose output
shape is unknown ahead (so ONNX Runtime allocates it, and it is copied) raises
it by about 64 MiB. Peak private memory is the peak resident size (VmHWM,
reset just before through ``/proc/PID/clear_refs``) less the growth of the
resident shared memory (RssShmem): the region pages the server touches count
as resident, but never go away while the region is registered, so they are
taken off whole.
"""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest
import tritonclient.utils.shared_memory as shm

from modelplatform.testing import ServerProcess

from ..plugins.onnxruntime.graphs import add_model, graph
from .shm_support import get, peak_rss, post, reset_peak, run_client, status_bytes

PROTOCOLS = ["http", "grpc"]
MiB = 1024 * 1024
BIG = 64 * MiB
#: Allowance for everything that is not the tensor (buffers, allocator slack).
SLACK = 16 * MiB
BATCHED = "neg_batched"
BATCHING = "dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 1000000 }\n"

#: Each case: FP32 ``x`` (shape ``shape``) into ``model``, Y into ``region``/``size``/``offset``.
#: Runs the cases at once, one client each (a dynamic batcher may merge them).
INFER = """
from concurrent.futures import ThreadPoolExecutor

def infer(case):
    client = module.InferenceServerClient(args["url"])
    data = np.array(case["x"], dtype=np.float32).reshape(case["shape"])
    source = module.InferInput("X", list(data.shape), "FP32")
    source.set_data_from_numpy(data)
    wanted = module.InferRequestedOutput("Y")
    wanted.set_shared_memory(case["region"], case["size"], offset=case.get("offset", 0))
    try:
        response = client.infer(case["model"], [source], outputs=[wanted]).get_response()
    except InferenceServerException as error:
        return {"error": error.message(), "status": str(error.status())}
    if isinstance(response, dict):
        output = response["outputs"][0]
        return {"shape": output["shape"], "carried": "data" in output or "parameters" in output}
    return {"shape": list(response.outputs[0].shape), "carried": any(response.raw_output_contents)}

with ThreadPoolExecutor(len(args["cases"])) as pool:
    print(json.dumps(list(pool.map(infer, args["cases"]))))
"""

#: One 64 MiB FP32 tensor from region "big_in" through ``model`` into region "big_out".
BIG_INFER = """
source = module.InferInput("X", [args["count"]], "FP32")
source.set_shared_memory("big_in", args["count"] * 4)
wanted = module.InferRequestedOutput("Y")
wanted.set_shared_memory("big_out", args["count"] * 4)
output = triton.infer(args["model"], [source], outputs=[wanted]).get_output("Y")
data = output.get("data") if isinstance(output, dict) else output.contents.fp32_contents
assert not data  # the tensor is in the region, not in the answer
"""


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    folder = tmp_path_factory.mktemp("onnx-shm")
    add_model(folder, "neg_static", graph("Neg", [4, 5], [4, 5]), [4, 5])
    add_model(folder, "neg_dynamic", graph("Neg", ["rows", "cols"], ["rows", "cols"]), ["rows", "cols"])
    add_model(folder, "neg_unknown", graph("Neg", ["n"], ["k"]), ["n"])  # Y's size known after the run
    add_model(folder, BATCHED, graph("Neg", ["batch", 4], ["batch", 4]), [4], 4, BATCHING)
    for name, output in (("big_http", ["n"]), ("big_grpc", ["n"]), ("big_copied", ["k"])):
        add_model(folder, name, graph("Identity", ["n"], output), ["n"])
    return folder


@pytest.fixture(scope="module")
def server(repository):
    with ServerProcess(
        "--model-repository", str(repository), "--allow-client-shm", "--log-format", "json"
    ) as process:
        yield process


@pytest.fixture
def region(server):
    """A region created and registered in this test; unregistered and destroyed after it."""
    made = []

    def make(name: str, size: int):
        handle = shm.create_shared_memory_region(name, f"/mp_test_{uuid.uuid4().hex[:12]}", size)
        made.append(handle)
        body = {"key": handle._shm_key, "offset": 0, "byte_size": size}
        assert post(server.http_port, f"/v2/systemsharedmemory/region/{name}/register", body)[0] == 200
        return handle

    yield make
    post(server.http_port, "/v2/systemsharedmemory/unregister")
    for handle in made:
        shm.destroy_shared_memory_region(handle)


def infer(server, protocol: str, *cases: dict) -> list[dict]:
    url = server.http_url if protocol == "http" else server.grpc_url
    return run_client(
        protocol, url, INFER, cases=[{**c, "x": np.asarray(c["x"]).ravel().tolist()} for c in cases]
    )


def test_the_server_binds_only_outputs_whose_shape_it_can_know_ahead(server):
    lines = server.log().splitlines()
    created = [json.loads(line) for line in lines if "onnx_session_created" in line]
    bindable = {event["model"]: event["bindable_outputs"] for event in created}
    assert bindable["neg_static"] == bindable["neg_dynamic"] == bindable["big_http"] == ["Y"]
    assert bindable["neg_unknown"] == bindable["big_copied"] == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(
    "model, shape", [("neg_static", (4, 5)), ("neg_dynamic", (3, 7)), ("neg_unknown", (9,))]
)
def test_an_output_in_a_region_holds_the_answer_and_stays_out_of_the_response(
    server, region, protocol, model, shape
):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 0.5
    handle = region("y", x.nbytes + 64)
    shm.set_shared_memory_region(handle, [np.full(x.size + 16, 7, np.float32)])
    (answer,) = infer(
        server, protocol, {"model": model, "x": x, "shape": shape, "region": "y", "size": x.nbytes + 64}
    )
    assert answer == {"shape": list(shape), "carried": False}
    written = shm.get_contents_as_numpy(handle, np.float32, [x.size + 16])
    np.testing.assert_array_equal(written[: x.size].reshape(shape), -x)
    assert (written[x.size :] == 7).all()  # nothing past the output


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("model", ["neg_dynamic", "neg_unknown"])
def test_a_region_too_small_is_refused_naming_the_output(server, region, protocol, model):
    x = np.ones((2, 8) if model == "neg_dynamic" else (16,), np.float32)
    handle = region("small", 128)
    shm.set_shared_memory_region(handle, [np.full(32, 7, np.float32)])
    case = {"model": model, "x": x, "shape": x.shape, "region": "small", "size": x.nbytes - 4}
    (answer,) = infer(server, protocol, case)
    assert "output 'Y'" in answer["error"] and "should be at least 64 bytes" in answer["error"]
    assert answer["status"] == ("400" if protocol == "http" else "StatusCode.INVALID_ARGUMENT")
    assert (shm.get_contents_as_numpy(handle, np.float32, [32]) == 7).all()  # nothing written


def _counts(server) -> tuple[int, int]:
    status, stats = get(server.http_port, f"/v2/models/{BATCHED}/stats")
    assert status == 200
    model = stats["model_stats"][0]
    return model["inference_count"], model["execution_count"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_dynamically_batched_requests_fill_their_own_windows(server, region, protocol):
    handle = region("rows", 4 * 16)
    rows = [np.full((1, 4), i + 1, np.float32) for i in range(4)]
    cases = [
        {"model": BATCHED, "x": row, "shape": [1, 4], "region": "rows", "size": 16, "offset": 16 * i}
        for i, row in enumerate(rows)
    ]
    inferred, executed = _counts(server)
    answers = infer(server, protocol, *cases)
    assert answers == [{"shape": [1, 4], "carried": False}] * 4
    np.testing.assert_array_equal(
        shm.get_contents_as_numpy(handle, np.float32, [4, 4]), -np.concatenate(rows)
    )
    now_inferred, now_executed = _counts(server)
    assert now_inferred - inferred == 4
    assert now_executed - executed < 4, "the batcher merged nothing: the copy path went untested"


def _private_peak_growth(server, protocol: str, model: str, count: int) -> int:
    """How far one 64 MiB request raised the server's peak memory, region pages left out."""
    pid = server.process.pid
    start, shared = reset_peak(pid), status_bytes(pid, "RssShmem")
    url = server.http_url if protocol == "http" else server.grpc_url
    run_client(protocol, url, BIG_INFER, model=model, count=count)
    return peak_rss(pid) - start - (status_bytes(pid, "RssShmem") - shared)


def test_a_64mib_output_is_written_by_onnx_runtime_with_no_copy(server, region):
    data = np.random.default_rng(19).random(BIG // 4, dtype=np.float32)
    shm.set_shared_memory_region(region("big_in", BIG), [data])
    answer = region("big_out", BIG)
    for model in ("big_http", "big_grpc", "big_copied"):  # a first small run sets each session up
        body = {"inputs": [{"name": "X", "datatype": "FP32", "shape": [1], "data": [1.0]}]}
        assert post(server.http_port, f"/v2/models/{model}/infer", body)[0] == 200
    for protocol in PROTOCOLS:
        shm.set_shared_memory_region(answer, [np.zeros(data.size, np.float32)])
        grown = _private_peak_growth(server, protocol, f"big_{protocol}", data.size)
        assert np.array_equal(shm.get_contents_as_numpy(answer, np.float32, [data.size]), data)
        assert grown < SLACK, f"{protocol}: peak private memory grew by {grown / MiB:.1f} MiB for 64 MiB"
    shm.set_shared_memory_region(answer, [np.zeros(data.size, np.float32)])
    copied = _private_peak_growth(server, "http", "big_copied", data.size)  # control: the measure sees a copy
    assert np.array_equal(shm.get_contents_as_numpy(answer, np.float32, [data.size]), data)
    assert copied >= BIG - SLACK, f"the copy path grew the peak by only {copied / MiB:.1f} MiB"
