"""CUDA shared memory on a machine with a GPU and pycuda (marked ``gpu``: ``make test-gpu``).

A region allocated in this process is registered by its CUDA IPC handle with
a server process, listed by status and unregistered; the server advertises
``cuda_shared_memory`` there. Without pycuda or a device these tests skip
(tests/e2e/test_shm_tritonclient.py covers the answers without a GPU).
"""

from __future__ import annotations

import base64

import pytest

from modelplatform.testing import ServerProcess

from ...conftest import MODEL_REPOSITORY
from ...e2e.shm_support import get, post

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def device_memory():
    driver = pytest.importorskip("pycuda.driver", reason="pycuda is not installed (requirements/gpu.txt)")
    try:
        driver.init()
        if driver.Device.count() == 0:
            pytest.skip("no CUDA device")
    except driver.Error as error:
        pytest.skip(f"no usable CUDA driver: {error}")
    context = driver.Device(0).make_context()
    try:
        memory = driver.mem_alloc(1 << 20)
        yield bytes(driver.mem_get_ipc_handle(memory))
    finally:
        context.pop()


@pytest.fixture(scope="module")
def server():
    args = (
        "--model-repository",
        str(MODEL_REPOSITORY),
        "--load-model",
        "identity_fp32",
        "--allow-client-shm",
    )
    with ServerProcess(*args) as process:
        yield process


def test_a_cuda_region_registers_by_its_ipc_handle(device_memory, server):
    port = server.http_port
    assert "cuda_shared_memory" in get(port, "/v2")[1]["extensions"]
    body = {
        "raw_handle": {"b64": base64.b64encode(device_memory).decode()},
        "device_id": 0,
        "byte_size": 1 << 20,
    }
    assert post(port, "/v2/cudasharedmemory/region/gpu0/register", body) == (200, None)
    assert get(port, "/v2/cudasharedmemory/status") == (
        200,
        [{"name": "gpu0", "device_id": 0, "byte_size": 1 << 20}],
    )
    assert post(port, "/v2/cudasharedmemory/region/gpu0/register", body)[0] == 400  # already in manager
    assert post(port, "/v2/cudasharedmemory/unregister") == (200, None)
    assert get(port, "/v2/cudasharedmemory/status") == (200, [])
