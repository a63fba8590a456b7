"""The SavedModel rows of `make bench`: a SavedModel MLP served, against bare TensorFlow in process.

`savedmodel_mlp` (scripts/build_savedmodel.py ``mlp``: 1024 -> 4096 -> 1000,
softmax, the shape of the TorchScript rows' module, built into a temporary
repository) is served by the tensorflow backend with dynamic batching
(max_batch_size 8, one CPU instance) and measured with perf_analyzer at c1
and c8 over HTTP binary and gRPC, each request one row. The server's
statistics then say which batch sizes its calls ran with; the same
SavedModel, loaded in this process with ``tf.saved_model.load`` and its
``serving_default`` signature called with those batch sizes in the same
proportions (numpy in, numpy out, as the backend does), is the "ceiling"
(the bare framework): the fraction is served rows per second over bare rows
per second. Needs TensorFlow.

    make bench BENCH_ARGS="--only savedmodel"
"""

from __future__ import annotations

import http.client
import json
import os
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
MODEL = "savedmodel_mlp"
LABEL = "savedmodel"
FEATURES, HIDDEN, CLASSES = 1024, 4096, 1000
CONFIG = f"""name: "{MODEL}"
platform: "tensorflow_savedmodel"
max_batch_size: 8
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
        loaded = _bare_model(repository)
        with ServerProcess(
            "--model-repository", str(repository), *server_args.split(), timeout=180
        ) as server:
            return [_median([_round(row, server, loaded, measure) for _ in range(repeat)]) for row in rows]
    finally:
        shutil.rmtree(repository, ignore_errors=True)


def _repository() -> Path:
    sys.path.insert(0, str(ROOT / "scripts"))
    import build_savedmodel  # scripts/: needs TensorFlow, imported only for these rows

    root = Path(tempfile.mkdtemp(prefix="bench-savedmodel-"))
    (root / MODEL).mkdir()
    (root / MODEL / "config.pbtxt").write_text(CONFIG)
    build_savedmodel.mlp(root / MODEL / "1" / "model.savedmodel", FEATURES, HIDDEN, CLASSES)
    return root


def _round(row: Row, server: ServerProcess, loaded: Any, measure: Measure) -> dict:
    before = _batches(server)
    served = measure(row.label, row.arguments(server))
    seen = {size: count - before.get(size, 0) for size, count in _batches(server).items()}
    seen = {size: count for size, count in seen.items() if count > 0}
    bare = _bare_rate(loaded.signatures["serving_default"], seen)
    mean = sum(s * c for s, c in seen.items()) / max(1, sum(seen.values()))
    print(f"measured {row.label}: {served:.1f}/s, bare tensorflow {bare:.1f}/s (mean batch {mean:.2f})",
          file=sys.stderr, flush=True)  # fmt: skip
    return {"scenario": row.label, "ours": served, "ceiling": bare,
            "ceiling_server": f"bare tensorflow, mean batch {mean:.2f}"}  # fmt: skip


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


def _bare_model(repository: Path) -> Any:
    """The SavedModel loaded here (kept while its signature runs: it owns the variables)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    return tf.saved_model.load(str(repository / MODEL / "1" / "model.savedmodel"))


def _bare_rate(function: Any, batches: dict[int, int]) -> float:
    """Rows per second of the signature called directly with these batch sizes, in these proportions."""
    if not batches:
        return 0.0
    seconds = {size: _seconds_per_call(function, size) for size in batches}
    rows = sum(size * count for size, count in batches.items())
    return rows / sum(seconds[size] * count for size, count in batches.items())


def _seconds_per_call(function: Any, size: int) -> float:
    import tensorflow as tf

    rows = np.zeros((size, FEATURES), np.float32)

    def call() -> None:
        for value in function(INPUT0=tf.convert_to_tensor(rows)).values():
            value.numpy()

    for _ in range(WARM_UP_CALLS):  # the first calls trace and optimise the graph
        call()
    calls, started = 0, time.perf_counter()
    while time.perf_counter() - started < BARE_SECONDS:
        call()
        calls += 1
    return (time.perf_counter() - started) / calls


def _median(rounds: list[dict]) -> dict:
    ordered = sorted(rounds, key=lambda r: r["ours"] / r["ceiling"] if r["ceiling"] else 0.0)
    return {**ordered[len(ordered) // 2], "runs": len(rounds)}
