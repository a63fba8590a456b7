"""The framework rows of `make bench`: a TorchScript MLP served, against bare torch in process.

`torchscript_mlp` (scripts/build_torchscript_model.py: 1024 -> 4096 -> 1000,
softmax; about 33 MB of weights, built into a temporary repository) is served
by the pytorch backend with dynamic batching (max_batch_size 8, one CPU
instance) and measured with perf_analyzer at c1 and c8 over HTTP binary and
gRPC, each request one row. The server's statistics then say which batch
sizes its forwards ran with; the same module, loaded in this process with
``torch.jit.load`` and called under ``torch.inference_mode`` with those batch
sizes in the same proportions, is the "ceiling" (the bare framework): the
fraction is served rows per second over bare rows per second. Needs torch.

    make bench BENCH_ARGS="--only torchscript"
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
from typing import Any

import numpy as np

from modelplatform.testing import ServerProcess

ROOT = Path(__file__).resolve().parent.parent
MODEL = "torchscript_mlp"
LABEL = "torchscript"
FEATURES, HIDDEN, CLASSES = 1024, 4096, 1000
CONFIG = f"""name: "{MODEL}"
platform: "pytorch_libtorch"
max_batch_size: 8
input [ {{ name: "INPUT__0" data_type: TYPE_FP32 dims: [ {FEATURES} ] }} ]
output [ {{ name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ {CLASSES} ] }} ]
dynamic_batching {{ }}
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
"""
#: Seconds of bare calls per batch size seen, after WARM_UP_CALLS calls.
BARE_SECONDS = 0.5
WARM_UP_CALLS = 3


@dataclass(frozen=True)
class Row:
    transport: str  # http-binary | grpc
    concurrency: int

    @property
    def label(self) -> str:
        return f"{MODEL} {self.transport} c{self.concurrency}"

    def arguments(self, server: ServerProcess) -> list[str]:
        kind, url = ("grpc", server.grpc_url) if self.transport == "grpc" else ("http", server.http_url)
        return ["-m", MODEL, "--concurrency-range", str(self.concurrency), "-i", kind, "-u", url,
                "--input-data", "zero"]  # fmt: skip


def chosen(only: str) -> list[Row]:
    rows = [Row(transport, concurrency) for transport in ("http-binary", "grpc") for concurrency in (1, 8)]
    return [row for row in rows if only in f"{row.label} {LABEL}"]


#: run.measure_arguments: (label, perf_analyzer arguments, window_ms=) -> inferences per second.
Measure = Callable[..., float]


def measure_rows(rows: list[Row], measure: Measure, server_args: str, repeat: int) -> list[dict]:
    """One table row per scenario: served rate, bare rate with the served batch sizes, median of rounds."""
    repository = _repository()
    try:
        module = _bare_module(repository)
        with ServerProcess(
            "--model-repository", str(repository), *server_args.split(), timeout=120
        ) as server:
            return [_median([_round(row, server, module, measure) for _ in range(repeat)]) for row in rows]
    finally:
        shutil.rmtree(repository, ignore_errors=True)


def _repository() -> Path:
    if str(ROOT / "scripts") not in sys.path:
        sys.path.insert(0, str(ROOT / "scripts"))
    import build_torchscript_model  # scripts/: needs torch, imported only for these rows

    root = Path(tempfile.mkdtemp(prefix="bench-torch-"))
    (root / MODEL).mkdir()
    (root / MODEL / "config.pbtxt").write_text(CONFIG)
    build_torchscript_model.write(root / MODEL / "1" / "model.pt", FEATURES, HIDDEN, CLASSES)
    return root


def _round(row: Row, server: ServerProcess, module: Any, measure: Measure) -> dict:
    before = _batches(server)
    served = measure(row.label, row.arguments(server))
    seen = {size: count - before.get(size, 0) for size, count in _batches(server).items()}
    seen = {size: count for size, count in seen.items() if count > 0}
    bare = _bare_rate(module, seen)
    mean = sum(s * c for s, c in seen.items()) / max(1, sum(seen.values()))
    print(f"measured {row.label}: {served:.1f}/s, bare torch {bare:.1f}/s (mean batch {mean:.2f})",
          file=sys.stderr, flush=True)  # fmt: skip
    return {"scenario": row.label, "ours": served, "ceiling": bare,
            "ceiling_server": f"bare torch, mean batch {mean:.2f}"}  # fmt: skip


def _batches(server: ServerProcess) -> dict[int, int]:
    """Executions so far by batch size (the model's statistics)."""
    host, port = server.http_url.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request("GET", f"/v2/models/{MODEL}/stats")
        stats = json.loads(connection.getresponse().read())["model_stats"][0]
    finally:
        connection.close()
    return {b["batch_size"]: b["compute_infer"]["count"] for b in stats["batch_stats"]}


def _bare_module(repository: Path) -> Any:
    import torch

    return torch.jit.load(str(repository / MODEL / "1" / "model.pt")).eval()


def _bare_rate(module: Any, batches: dict[int, int]) -> float:
    """Rows per second of the module called directly with these batch sizes, in these proportions."""
    if not batches:
        return 0.0
    seconds = {size: _seconds_per_call(module, size) for size in batches}
    rows = sum(size * count for size, count in batches.items())
    return rows / sum(seconds[size] * count for size, count in batches.items())


def _seconds_per_call(module: Any, size: int) -> float:
    import torch

    rows = np.zeros((size, FEATURES), np.float32)
    with torch.inference_mode():
        for _ in range(WARM_UP_CALLS):  # TorchScript's profiling executor optimises after its first runs
            module(torch.from_numpy(rows)).numpy()
        calls, started = 0, time.perf_counter()
        while time.perf_counter() - started < BARE_SECONDS:
            module(torch.from_numpy(rows)).numpy()
            calls += 1
    return (time.perf_counter() - started) / calls


def _median(rounds: list[dict]) -> dict:
    ordered = sorted(rounds, key=lambda r: r["ours"] / r["ceiling"] if r["ceiling"] else 0.0)
    return {**ordered[len(ordered) // 2], "runs": len(rounds)}
