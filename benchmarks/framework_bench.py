"""What the framework rows of `make bench` share: one MLP served, against the bare framework in process.

A framework's rows (torchscript_rows.py, savedmodel_rows.py) name how to
build the model into a temporary repository, how to load it in this process
and how to call it on a batch of rows; the rest is here. The model (1024 ->
4096 -> 1000, softmax) is served with dynamic batching (max_batch_size 8, one
CPU instance) and measured with perf_analyzer at c1 and c8 over HTTP binary
and gRPC, each request one row. The server's statistics then say which batch
sizes its calls ran with; the same model called here with those batch sizes
in the same proportions is the "ceiling" (the bare framework): the fraction
is served rows per second over bare rows per second.
"""

from __future__ import annotations

import http.client
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from modelplatform.testing import ServerProcess

ROOT = Path(__file__).resolve().parent.parent
FEATURES, HIDDEN, CLASSES = 1024, 4096, 1000
#: Seconds of bare calls per batch size seen, after WARM_UP_CALLS calls.
BARE_SECONDS = 0.5
#: The first calls trace and optimise (TorchScript's profiling executor, tf.function).
WARM_UP_CALLS = 3

#: run.measure_arguments: (label, perf_analyzer arguments, window_ms=) -> inferences per second.
Measure = Callable[..., float]
#: One bare call on a batch of rows, its outputs read back to numpy as the backend does.
BareCall = Callable[[np.ndarray], None]


@dataclass(frozen=True)
class Framework:
    label: str  # what --only matches, besides a row's label
    name: str  # the bare framework, as the table names it
    model: str
    config: str  # config.pbtxt
    build: Callable[[Path], None]  # writes the model's version folder 1 under this model folder
    bare: Callable[[Path], BareCall]  # the model folder -> the call, the model kept alive by it
    start_timeout: float


@dataclass(frozen=True)
class Row:
    model: str
    transport: str  # http-binary | grpc
    concurrency: int

    @property
    def label(self) -> str:
        return f"{self.model} {self.transport} c{self.concurrency}"

    def arguments(self, server: ServerProcess) -> list[str]:
        kind, url = ("grpc", server.grpc_url) if self.transport == "grpc" else ("http", server.http_url)
        return ["-m", self.model, "--concurrency-range", str(self.concurrency), "-i", kind, "-u", url,
                "--input-data", "zero"]  # fmt: skip


def chosen(framework: Framework, only: str) -> list[Row]:
    rows = [
        Row(framework.model, transport, concurrency)
        for transport in ("http-binary", "grpc")
        for concurrency in (1, 8)
    ]
    return [row for row in rows if only in f"{row.label} {framework.label}"]


def measure_rows(
    framework: Framework, rows: list[Row], measure: Measure, server_args: str, repeat: int
) -> list[dict]:
    """One table row per scenario: served rate, bare rate with the served batch sizes, median of rounds."""
    repository = build_repository(framework)
    try:
        call = framework.bare(repository / framework.model)
        with ServerProcess(
            "--model-repository", str(repository), *server_args.split(), timeout=framework.start_timeout
        ) as server:
            return [
                _median([_round(framework, row, server, call, measure) for _ in range(repeat)])
                for row in rows
            ]
    finally:
        shutil.rmtree(repository, ignore_errors=True)


def build_repository(framework: Framework) -> Path:
    """A temporary repository holding only the framework's model."""
    if str(ROOT / "scripts") not in sys.path:
        sys.path.insert(0, str(ROOT / "scripts"))  # the builders live there
    root = Path(tempfile.mkdtemp(prefix=f"bench-{framework.label}-"))
    (root / framework.model).mkdir()
    (root / framework.model / "config.pbtxt").write_text(framework.config)
    framework.build(root / framework.model)
    return root


def _round(framework: Framework, row: Row, server: ServerProcess, call: BareCall, measure: Measure) -> dict:
    before = _batches(server, framework.model)
    served = measure(row.label, row.arguments(server))
    after = _batches(server, framework.model)
    seen = {size: count - before.get(size, 0) for size, count in after.items()}
    seen = {size: count for size, count in seen.items() if count > 0}
    bare = bare_rate(call, seen)
    mean = sum(s * c for s, c in seen.items()) / max(1, sum(seen.values()))
    print(f"measured {row.label}: {served:.1f}/s, bare {framework.name} {bare:.1f}/s (mean batch {mean:.2f})",
          file=sys.stderr, flush=True)  # fmt: skip
    return {"scenario": row.label, "ours": served, "ceiling": bare,
            "ceiling_server": f"bare {framework.name}, mean batch {mean:.2f}"}  # fmt: skip


def _batches(server: ServerProcess, model: str) -> dict[int, int]:
    """Executions so far by batch size (the model's statistics)."""
    host, port = server.http_url.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request("GET", f"/v2/models/{model}/stats")
        stats = json.loads(connection.getresponse().read())["model_stats"][0]
    finally:
        connection.close()
    return {b["batch_size"]: b["compute_infer"]["count"] for b in stats["batch_stats"]}


def bare_rate(call: BareCall, batches: dict[int, int]) -> float:
    """Rows per second of the model called directly with these batch sizes, in these proportions."""
    if not batches:
        return 0.0
    seconds = {size: _seconds_per_call(call, size) for size in batches}
    rows = sum(size * count for size, count in batches.items())
    return rows / sum(seconds[size] * count for size, count in batches.items())


def _seconds_per_call(call: BareCall, size: int) -> float:
    rows = np.zeros((size, FEATURES), np.float32)
    for _ in range(WARM_UP_CALLS):
        call(rows)
    calls, started = 0, time.perf_counter()
    while time.perf_counter() - started < BARE_SECONDS:
        call(rows)
        calls += 1
    return (time.perf_counter() - started) / calls


def _median(rounds: list[dict]) -> dict:
    ordered = sorted(rounds, key=lambda r: r["ours"] / r["ceiling"] if r["ceiling"] else 0.0)
    return {**ordered[len(ordered) // 2], "runs": len(rounds)}
