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

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from modelplatform.testing import ServerProcess

from .support import PERF_ANALYZER, require_cuda, write_probe, write_torch_probe

pytestmark = pytest.mark.gpu

ELEMENTS = 1024
BYTES = ELEMENTS * 4
CLIENT = Path(__file__).with_name("cuda_client.py")


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


def _client(*arguments: str) -> dict:
    """Run cuda_client.py (the clients live in their own process) and read its JSON answer."""
    command = [sys.executable, str(CLIENT), *arguments]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _url(server: ServerProcess, protocol: str) -> str:
    return server.http_url if protocol == "http" else server.grpc_url


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_gpu_model_works_in_the_clients_device_memory(server, protocol):
    found = _client("infer", protocol, _url(server, protocol), "gpu_probe", "INPUT0", "OUTPUT0", "WHERE")
    values = np.array(found["values"], dtype=np.float32)
    np.testing.assert_array_equal(found["after"], values + 1)  # changed in place: the model held our memory
    np.testing.assert_allclose(found["answer"], (values + 1) * 2, rtol=1e-6)
    assert found["info"] == ["cuda:0", "GPU", "cuda:0", "False"]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_torchscript_model_on_the_gpu_works_in_the_clients_device_memory(server, protocol):
    found = _client("infer", protocol, _url(server, protocol), "torch_probe", "INPUT__0", "OUTPUT__0")
    values = np.array(found["values"], dtype=np.float32)
    np.testing.assert_array_equal(found["after"], values + 1)  # the model's in-place add reached our memory
    np.testing.assert_allclose(found["answer"], (values + 1) * 2, rtol=1e-6)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_model_reading_host_memory_gets_a_copy(server, protocol):
    found = _client("infer", protocol, _url(server, protocol), "host_probe", "INPUT0", "OUTPUT0", "WHERE")
    values = np.array(found["values"], dtype=np.float32)
    np.testing.assert_array_equal(found["after"], values)  # a host copy: the client's memory is untouched
    np.testing.assert_allclose(found["answer"], values * 2, rtol=1e-6)
    assert found["info"][0] == "cpu" and found["info"][1] == "GPU"


def test_bad_handles_sizes_and_offsets_are_refused_naming_the_region(server):
    found = _client("refusals", server.http_url, server.grpc_url, "gpu_probe")
    assert found["http bad handle"]["status"] == "400" and "bogus" in found["http bad handle"]["message"]
    assert "INVALID_ARGUMENT" in found["grpc bad handle"]["status"]
    assert "bogus" in found["grpc bad handle"]["message"]
    assert "no CUDA device" in found["http no device"]["message"]
    for case in ("http past the end", "grpc past the end", "http wrong size", "grpc wrong size"):
        assert found[case] is not None and "small" in found[case]["message"], (case, found[case])
    assert found["status after unregister"] == []
    assert "small" in found["http unregistered"]["message"]
    assert server.process.poll() is None  # still serving


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_perf_analyzer_with_cuda_shared_memory(server, protocol):
    if not PERF_ANALYZER.exists():
        pytest.skip("perf_analyzer is missing: run `make perf-analyzer`")
    url = server.http_url if protocol == "http" else server.grpc_url
    command = [
        str(PERF_ANALYZER), "-m", "torch_probe", "-i", protocol, "-u", url, "--shape", f"INPUT__0:{ELEMENTS}",
        "--shared-memory", "cuda", "--output-shared-memory-size", str(BYTES),
        "--measurement-interval", "1000", "--stability-percentage", "999", "--max-trials", "3",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Throughput:" in done.stdout
    assert "kind=cuda" in server.log()
