"""System shared memory under ``--workers 2``: a region registered through one worker serves on all.

Every call opens its own connection, so SO_REUSEPORT spreads them over both
workers; a region known to one worker only would show as a mix of answers.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from multiprocessing import shared_memory

import numpy as np
import pytest

from modelplatform.testing import ServerProcess

from ..conftest import MODEL_REPOSITORY
from .shm_support import get, post
from .test_workers import wait_ready

CONNECTIONS = 16
REGION = "workers_input"


@pytest.fixture(scope="module")
def workers() -> Iterator[ServerProcess]:
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "identity_fp32",
            "--workers", "2", "--allow-client-shm")  # fmt: skip
    with ServerProcess(*args) as server:
        wait_ready(server)
        yield server


@pytest.fixture()
def shm() -> Iterator[shared_memory.SharedMemory]:
    block = shared_memory.SharedMemory(name=f"mp_{uuid.uuid4().hex[:12]}", create=True, size=64)
    np.ndarray((16,), np.float32, buffer=block.buf)[:] = np.arange(16, dtype=np.float32)
    yield block
    block.close()
    block.unlink()


def infer_from_region(port: int) -> tuple[int, object]:
    parameters = {"shared_memory_region": REGION, "shared_memory_byte_size": 64}
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [16], "parameters": parameters}]}
    return post(port, "/v2/models/identity_fp32/infer", body)


def region_names(port: int) -> set[tuple[str, ...]]:
    seen = set()
    for _ in range(CONNECTIONS):
        status, regions = get(port, "/v2/systemsharedmemory/status")
        assert status == 200, regions
        seen.add(tuple(sorted(r["name"] for r in regions)))
    return seen


def test_a_region_registered_through_one_worker_serves_on_every_worker(workers, shm) -> None:
    port = workers.http_port
    key = f"/{shm.name.lstrip('/')}"
    status, body = post(port, f"/v2/systemsharedmemory/region/{REGION}/register",
                        {"key": key, "offset": 0, "byte_size": 64})  # fmt: skip
    assert status == 200, body
    assert region_names(port) == {(REGION,)}
    for _ in range(CONNECTIONS):
        status, answer = infer_from_region(port)
        assert status == 200, answer
        assert answer["outputs"][0]["data"] == list(map(float, range(16)))
    # A second register of the name is refused on whichever worker it reaches.
    assert (
        post(
            port,
            f"/v2/systemsharedmemory/region/{REGION}/register",
            {"key": key, "offset": 0, "byte_size": 64},
        )[0]
        == 400
    )  # fmt: skip  (Triton: ALREADY_EXISTS is a 400)
    status, body = post(port, f"/v2/systemsharedmemory/region/{REGION}/unregister")
    assert status == 200, body
    assert region_names(port) == {()}
    assert {infer_from_region(port)[0] for _ in range(CONNECTIONS)} == {400}
    assert os.path.exists(f"/dev/shm/{shm.name.lstrip('/')}")  # the client's object is the client's
