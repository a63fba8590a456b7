"""A 64 MiB tensor in shared memory is not copied on the server's side (issue 19 point 2).

Measured from outside as the server process's peak resident memory
(VmHWM), reset to the current resident size just before each request
(``/proc/PID/clear_refs`` 5). The regions are mapped and their pages touched
by a first request, so they are already resident: a request that reads its
input as a view of region A and writes its output once into region B raises
the peak by nothing like 64 MiB; any private copy of the tensor would raise
it by 64 MiB. The same measurement of a 64 MiB binary HTTP request, whose
body must be received into server memory, shows the method sees a copy.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest
import tritonclient.utils.shared_memory as shm

from modelplatform.testing import ServerProcess

from ..conftest import MODEL_REPOSITORY
from .shm_support import binary_infer, peak_rss, post, reset_peak, run_client

MiB = 1024 * 1024
SIZE = 64 * MiB
#: Allowance for everything that is not the tensor (buffers, allocator slack).
SLACK = 16 * MiB
#: Run by Triton's own client, in a child (shm_support.run_client).
SHM_INFER = """
source = module.InferInput("INPUT0", [args["count"]], "FP32")
source.set_shared_memory("zc_in", args["count"] * 4)
wanted = module.InferRequestedOutput("OUTPUT0")
wanted.set_shared_memory("zc_out", args["count"] * 4)
output = triton.infer("identity_fp32", [source], outputs=[wanted]).get_output("OUTPUT0")
data = output.get("data") if isinstance(output, dict) else output.contents.fp32_contents
assert not data  # the tensor is in the region, not in the answer
"""


@pytest.fixture(scope="module")
def server():
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "identity_fp32",
            "--allow-client-shm", "--max-request-bytes", str(2 * SIZE))  # fmt: skip
    with ServerProcess(*args) as process:
        yield process


@pytest.fixture(scope="module")
def regions(server):
    data = np.random.default_rng(4).random(SIZE // 4, dtype=np.float32)
    given = shm.create_shared_memory_region("zc_in", f"/mp_test_zc_in_{uuid.uuid4().hex[:8]}", SIZE)
    answer = shm.create_shared_memory_region("zc_out", f"/mp_test_zc_out_{uuid.uuid4().hex[:8]}", SIZE)
    shm.set_shared_memory_region(given, [data])
    for name, handle in (("zc_in", given), ("zc_out", answer)):
        body = {"key": handle._shm_key, "offset": 0, "byte_size": SIZE}
        assert post(server.http_port, f"/v2/systemsharedmemory/region/{name}/register", body)[0] == 200
    yield data, answer
    post(server.http_port, "/v2/systemsharedmemory/unregister")
    shm.destroy_shared_memory_region(given)
    shm.destroy_shared_memory_region(answer)


def shm_infer(server, protocol: str, count: int) -> None:
    url = server.http_url if protocol == "http" else server.grpc_url
    run_client(protocol, url, SHM_INFER, count=count)


def test_64mib_through_regions_is_never_copied(server, regions):
    data, answer = regions
    pid = server.process.pid
    shm_infer(server, "http", data.size)  # maps and touches both regions
    for protocol in ("http", "grpc"):
        shm.set_shared_memory_region(answer, [np.zeros(data.size, np.float32)])
        start = reset_peak(pid)
        shm_infer(server, protocol, data.size)
        grown = peak_rss(pid) - start
        assert np.array_equal(shm.get_contents_as_numpy(answer, np.float32, [data.size]), data)
        assert grown < SLACK, f"{protocol}: peak RSS grew by {grown / MiB:.1f} MiB for a 64 MiB tensor"


def test_the_measurement_sees_a_copy(server, regions):
    """Control: a 64 MiB binary body has to land in server memory, and the peak shows it."""
    data, _ = regions
    binary_infer(server.http_port, data[:1024])
    start = reset_peak(server.process.pid)
    assert np.array_equal(binary_infer(server.http_port, data), data)
    assert peak_rss(server.process.pid) - start >= SIZE - SLACK
