"""The nv_gpu_* families read real values through NVML and move under load (``make test-gpu``).

The test process loads the GPU (a loop of large matrix products, plus 2 GiB
it holds) while it scrapes the server's /metrics every 200 ms: utilisation
must rise above zero and the memory in use must grow by about what the test
holds, on the device the server reports.
"""

from __future__ import annotations

import http.client
import threading
import time

import pytest

from modelplatform.testing import ServerProcess

from ..conftest import MODEL_REPOSITORY

pytestmark = pytest.mark.gpu

GiB = 1 << 30


def _samples(port: int, family: str) -> list[float]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", "/metrics")
    text = connection.getresponse().read().decode()
    return [float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(family + "{")]


def test_gpu_utilisation_and_memory_move_under_load():
    torch = pytest.importorskip("torch")
    pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    args = (
        "--model-repository",
        str(MODEL_REPOSITORY),
        "--load-model",
        "simple",
        "--metrics-interval-ms",
        "200",
    )
    with ServerProcess(*args) as server:
        time.sleep(0.5)
        idle_memory = _samples(server.http_port, "nv_gpu_memory_used_bytes")[0]
        held = torch.empty(2 * GiB, dtype=torch.uint8, device="cuda:0")
        held.fill_(1)
        stop = threading.Event()

        def load() -> None:
            a = torch.randn(8192, 8192, device="cuda:0")
            while not stop.is_set():
                a = torch.tanh(a @ a)
                torch.cuda.synchronize()

        worker = threading.Thread(target=load, daemon=True)
        worker.start()
        utilisation, memory = [], []
        try:
            deadline = time.monotonic() + 6
            while time.monotonic() < deadline:
                time.sleep(0.2)
                utilisation += _samples(server.http_port, "nv_gpu_utilization")[:1]
                memory += _samples(server.http_port, "nv_gpu_memory_used_bytes")[:1]
        finally:
            stop.set()
            worker.join()
            del held
    assert max(utilisation) > 0.2, utilisation  # the metric is a fraction in [0, 1]
    assert all(0.0 <= value <= 1.0 for value in utilisation), utilisation
    assert max(memory) - idle_memory >= 1.5 * GiB, (idle_memory, memory)
