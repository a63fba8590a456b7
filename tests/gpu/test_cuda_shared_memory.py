"""CUDA shared memory end to end on a real GPU (``make test-gpu``), as Triton's extension.

The client (this process) allocates device memory with tritonclient's
``cuda_shared_memory`` utilities and registers its CUDA IPC handle with a
server subprocess, which opens it through pycuda. Inputs in the region reach
a GPU model without a host copy (the probe model changes the client's input
in place, which only a model holding the client's memory can do) and
outputs are written into the client's region, over HTTP and gRPC; a model
that reads host memory gets a host copy and still answers right. Bad
handles, sizes and offsets are refused naming the region; unregistering
closes the handle; perf_analyzer runs with ``--shared-memory cuda``.
"""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from modelplatform.testing import ServerProcess

from .support import PERF_ANALYZER, require_cuda, write_probe, write_torch_probe

pytestmark = pytest.mark.gpu

ELEMENTS = 1024
BYTES = ELEMENTS * 4


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_cuda()
    repository = tmp_path_factory.mktemp("repository")
    write_probe(repository, "gpu_probe", force_cpu="no")
    write_probe(repository, "host_probe", force_cpu="yes")
    write_torch_probe(repository)
    args = ("--model-repository", str(repository), "--allow-client-shm")
    with ServerProcess(*args) as process:
        yield process


@pytest.fixture()
def cudashm():
    from tritonclient.utils import cuda_shared_memory

    handles = []

    def create(name: str, size: int):
        handle = cuda_shared_memory.create_shared_memory_region(name, size, 0)
        handles.append(handle)
        return handle

    yield cuda_shared_memory, create
    for handle in handles:
        cuda_shared_memory.destroy_shared_memory_region(handle)


def _client(protocol: str, server: ServerProcess):
    if protocol == "http":
        import tritonclient.http as client_module

        return client_module, client_module.InferenceServerClient(server.http_url)
    import tritonclient.grpc as client_module

    return client_module, client_module.InferenceServerClient(server.grpc_url)


def _infer_through_regions(protocol, server, cudashm, model, values, names=("INPUT0", "OUTPUT0")):
    cuda_shm, create = cudashm
    module, client = _client(protocol, server)
    client.unregister_cuda_shared_memory()
    source = create(f"in_{protocol}_{model}", BYTES)
    target = create(f"out_{protocol}_{model}", BYTES)
    cuda_shm.set_shared_memory_region(source, [values])
    client.register_cuda_shared_memory(f"in_{protocol}_{model}", cuda_shm.get_raw_handle(source), 0, BYTES)
    client.register_cuda_shared_memory(f"out_{protocol}_{model}", cuda_shm.get_raw_handle(target), 0, BYTES)
    tensor = module.InferInput(names[0], [ELEMENTS], "FP32")
    tensor.set_shared_memory(f"in_{protocol}_{model}", BYTES)
    output = module.InferRequestedOutput(names[1])
    output.set_shared_memory(f"out_{protocol}_{model}", BYTES)
    outputs = [output] + ([module.InferRequestedOutput("WHERE")] if names[0] == "INPUT0" else [])
    result = client.infer(model, [tensor], outputs=outputs)
    assert result.as_numpy(names[1]) is None  # its data went to the region, not the response
    answer = cuda_shm.get_contents_as_numpy(target, "FP32", [ELEMENTS])
    after = cuda_shm.get_contents_as_numpy(source, "FP32", [ELEMENTS])
    info = [w.decode() for w in result.as_numpy("WHERE")] if names[0] == "INPUT0" else []
    client.unregister_cuda_shared_memory()
    return answer, after, info


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_gpu_model_works_in_the_clients_device_memory(server, cudashm, protocol):
    values = np.random.default_rng().standard_normal(ELEMENTS).astype(np.float32)
    answer, after, info = _infer_through_regions(protocol, server, cudashm, "gpu_probe", values)
    np.testing.assert_array_equal(after, values + 1)  # changed in place: the model held our memory
    np.testing.assert_allclose(answer, (values + 1) * 2, rtol=1e-6)
    assert info == ["cuda:0", "GPU", "cuda:0", "False"]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_torchscript_model_on_the_gpu_works_in_the_clients_device_memory(server, cudashm, protocol):
    values = np.random.default_rng().standard_normal(ELEMENTS).astype(np.float32)
    names = ("INPUT__0", "OUTPUT__0")
    answer, after, _ = _infer_through_regions(protocol, server, cudashm, "torch_probe", values, names)
    np.testing.assert_array_equal(after, values + 1)  # the model's in-place add reached our memory
    np.testing.assert_allclose(answer, (values + 1) * 2, rtol=1e-6)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_model_reading_host_memory_gets_a_copy(server, cudashm, protocol):
    values = np.random.default_rng().standard_normal(ELEMENTS).astype(np.float32)
    answer, after, info = _infer_through_regions(protocol, server, cudashm, "host_probe", values)
    np.testing.assert_array_equal(after, values)  # a host copy: the client's memory is untouched
    np.testing.assert_allclose(answer, values * 2, rtol=1e-6)
    assert info[0] == "cpu" and info[1] == "GPU"


def test_bad_handles_sizes_and_offsets_are_refused_naming_the_region(server, cudashm):
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient
    from tritonclient.utils import InferenceServerException

    cuda_shm, create = cudashm
    http = httpclient.InferenceServerClient(server.http_url)
    grpc = grpcclient.InferenceServerClient(server.grpc_url)
    http.unregister_cuda_shared_memory()
    with pytest.raises(InferenceServerException, match="bogus") as refused:
        http.register_cuda_shared_memory("bogus", b"\x01" * 64, 0, BYTES)
    assert refused.value.status() == "400"
    with pytest.raises(InferenceServerException, match="bogus") as refused:
        grpc.register_cuda_shared_memory("bogus", b"\x01" * 64, 0, BYTES)
    assert "INVALID_ARGUMENT" in str(refused.value.status())
    with pytest.raises(InferenceServerException, match="no CUDA device"):
        http.register_cuda_shared_memory("far", cuda_shm.get_raw_handle(create("far", BYTES)), 7, BYTES)

    region = create("small", BYTES)
    http.register_cuda_shared_memory("small", cuda_shm.get_raw_handle(region), 0, BYTES)
    for client_module, client in ((httpclient, http), (grpcclient, grpc)):
        tensor = client_module.InferInput("INPUT0", [ELEMENTS], "FP32")
        tensor.set_shared_memory("small", BYTES, offset=16)  # runs past the region's end
        with pytest.raises(InferenceServerException, match="small"):
            client.infer("gpu_probe", [tensor])
        tensor = client_module.InferInput("INPUT0", [ELEMENTS], "FP32")
        tensor.set_shared_memory("small", BYTES - 4)  # not the tensor's size
        with pytest.raises(InferenceServerException, match="small"):
            client.infer("gpu_probe", [tensor])
    http.unregister_cuda_shared_memory("small")
    assert http.get_cuda_shared_memory_status() == []
    tensor = httpclient.InferInput("INPUT0", [ELEMENTS], "FP32")
    tensor.set_shared_memory("small", BYTES)
    with pytest.raises(InferenceServerException, match="small"):
        http.infer("gpu_probe", [tensor])
    # the handle was closed: the same memory registers again under another name
    http.register_cuda_shared_memory("again", cuda_shm.get_raw_handle(region), 0, BYTES)
    http.unregister_cuda_shared_memory()
    assert server.process.poll() is None  # still serving


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_perf_analyzer_with_cuda_shared_memory(server, protocol):
    if not PERF_ANALYZER.exists():
        pytest.skip("perf_analyzer is missing: run `make perf-analyzer`")
    url = server.http_url if protocol == "http" else server.grpc_url
    command = [
        str(PERF_ANALYZER), "-m", "gpu_probe", "-i", protocol, "-u", url, "--shape", f"INPUT0:{ELEMENTS}",
        "--shared-memory", "cuda", "--output-shared-memory-size", str(BYTES),
        "--measurement-interval", "1000", "--stability-percentage", "999", "--max-trials", "3",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Throughput:" in done.stdout
    assert "kind=cuda" in server.log()
