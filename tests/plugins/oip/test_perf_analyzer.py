"""Triton's perf_analyzer measures `simple` over HTTP and gRPC, unchanged (protocol-notes E).

The binary is installed by `make perf-analyzer` (a dependency of `make test`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PERF_ANALYZER = ROOT / ".venv/perf_analyzer/perf_analyzer"
#: Three 1 s windows, averaged: bounded on a busy 2-core machine.
BOUNDED = ["--measurement-interval", "1000", "--stability-percentage", "999", "--max-trials", "3"]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_perf_analyzer_measures_simple(server, protocol):
    assert PERF_ANALYZER.exists(), "perf_analyzer is missing: run `make perf-analyzer`"
    url = server.http_url if protocol == "http" else server.grpc_url
    command = [str(PERF_ANALYZER), "-m", "simple", "-i", protocol, "-u", url, *BOUNDED]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Throughput:" in done.stdout
    # Server-side statistics were read (advertised `statistics`) and parsed.
    assert "Successful request count:" in done.stdout
