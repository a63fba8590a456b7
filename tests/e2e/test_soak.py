"""A short soak inside `make test`: benchmarks/soak/ for 40 seconds.

`make soak MINUTES=N` is the long form (docs/reliability.md, "Soak"). This
run starts the real server and the real client processes, with reloads of
`simple` in between, and asserts what must hold at any length: no 5xx, no
wrong answer, no other unexpected answer, every dialect served, the server
log free of warnings and errors. Memory is judged only by the long run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ..conftest import ROOT

SECONDS = 40
DIALECTS = {
    "oip-http-json", "oip-http-binary", "oip-grpc", "tfs-rest", "tfs-grpc",
    "grps-rest", "grps-grpc", "grps-stream", "repository-http", "repository-grpc",
}  # fmt: skip


def test_a_short_soak_has_no_5xx_no_wrong_and_no_unexpected_answer(tmp_path):
    summary = tmp_path / "summary.json"
    path = os.pathsep.join([str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH", "")])
    run = subprocess.run(
        [sys.executable, "-m", "soak", "--seconds", str(SECONDS), "--summary-json", str(summary)],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=SECONDS + 400,
    )
    print(run.stdout)
    assert summary.exists(), run.stdout + run.stderr
    result = json.loads(summary.read_text())
    totals = result["totals"]
    assert (totals["5xx"], totals["wrong"], totals["error"]) == (0, 0, 0), run.stdout
    assert result["failures"] == [] and run.returncode == 0, run.stdout + run.stderr
    assert set(result["dialects"]) == DIALECTS
    assert all(row["ok"] > 0 for row in result["dialects"].values()), result["dialects"]
    assert result["server_log_notable"] == {}, run.stdout
