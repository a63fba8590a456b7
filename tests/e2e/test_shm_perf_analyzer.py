"""perf_analyzer --shared-memory system over HTTP and gRPC, unchanged (issue 19 point 5).

perf_analyzer unregisters every region, registers one per input and output,
and sends only region parameters; the server's log shows the regions it mapped.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from modelplatform.testing import ServerProcess

from ..conftest import MODEL_REPOSITORY

ROOT = Path(__file__).resolve().parents[2]
PERF_ANALYZER = ROOT / ".venv/perf_analyzer/perf_analyzer"
#: Three 1 s windows, averaged: bounded on a busy 2-core machine.
BOUNDED = ["--measurement-interval", "1000", "--stability-percentage", "999", "--max-trials", "3"]


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


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_perf_analyzer_with_system_shared_memory(server, protocol):
    assert PERF_ANALYZER.exists(), "perf_analyzer is missing: run `make perf-analyzer`"
    url = server.http_url if protocol == "http" else server.grpc_url
    command = [
        str(PERF_ANALYZER), "-m", "identity_fp32", "-i", protocol, "-u", url, "--shape", "INPUT0:4096",
        "--shared-memory", "system", "--output-shared-memory-size", "16384", *BOUNDED,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Throughput:" in done.stdout and "Successful request count:" in done.stdout
    log = server.log()
    assert "shm_region_registered" in log and "region=INPUT0" in log and "region=OUTPUT0" in log
